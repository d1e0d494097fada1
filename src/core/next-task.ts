// The host's batching of pushes: once per task of the event loop, after pending I/O callbacks.

/** Runs `fn` as the next task of the event loop (after pending I/O callbacks). */
export const nextTask: (fn: () => void) => void =
  typeof setImmediate === 'function'
    ? (fn) => void setImmediate(fn)
    : (() => {
        // Browsers: a MessageChannel ping is a macrotask without setTimeout's clamping.
        const channel = new MessageChannel()
        const queue: (() => void)[] = []
        channel.port1.onmessage = () => queue.shift()?.()
        return (fn) => {
          queue.push(fn)
          channel.port2.postMessage(0)
        }
      })()
