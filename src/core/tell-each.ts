// How the SDK calls an app's listeners (see tellEach).

/**
 * Calls `call` with each of `listeners` (a copy: one may (un)subscribe while it is called). A
 * listener's failure is its own, as a Replication's subscriber's is: the others hear the change
 * all the same, and nothing escapes into the store's machinery (a rejection left unhandled, an
 * exception thrown from a microtask, a copy stopped). Where the platform has `reportError`
 * (browsers), the error is reported there, as a failing event listener's is.
 */
export function tellEach<L>(listeners: Iterable<L>, call: (listener: L) => void): void {
  for (const listener of [...listeners]) {
    try {
      call(listener)
    } catch (err) {
      ;(globalThis as { reportError?: (err: unknown) => void }).reportError?.(err)
    }
  }
}
