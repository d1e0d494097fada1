// The other processes of bench/sessions.ts (forked with tsx, IPC to the parent):
//   build: builds a store of many sessions through openStore() (bench/support/session-build.ts)
//          and sends the result;
//   watch: opens the same store as the parent (openStore() with its defaults, the engine in a
//          worker), subscribes to store.sessions() and, armed with a session id and its length,
//          tells the parent as soon as its list shows that session first, grown. The parent
//          times the round trip on its own clock (append → this process's listener → IPC back).
// Argument: one JSON object (ChildTask).
import { openStore, type Store } from '../src/index-node'
import { buildSessions, type BuildOptions } from './support/session-build'

export type Target = { storage: 'fs'; dir: string } | { storage: 'postgres'; url: string }

export type ChildTask = { mode: 'build'; target: Target; options: BuildOptions } | { mode: 'watch'; target: Target }

/** Parent → watcher. */
export type ToWatcher = { kind: 'arm'; id: string; length: number } | { kind: 'stop' }

/** Watcher or builder → parent. */
export type FromChild =
  | { kind: 'ready'; rows: number }
  | { kind: 'armed' }
  /** `calls`: listener calls since the arm. */
  | { kind: 'seen'; calls: number }
  | { kind: 'built'; result: Awaited<ReturnType<typeof buildSessions>> }
  | { kind: 'log'; line: string }
  | { kind: 'error'; message: string }

const send = (m: FromChild) => process.send!(m)

async function build(task: Extract<ChildTask, { mode: 'build' }>): Promise<void> {
  // The build's own durability: 'relaxed' (an openStore option): the stored form is the same.
  const store = await openStore({ ...task.target, durability: 'relaxed' })
  try {
    const result = await buildSessions(store, task.options, (line) => send({ kind: 'log', line: `${task.target.storage}: ${line}` }))
    send({ kind: 'built', result })
  } finally {
    await store.close()
  }
}

async function watch(task: Extract<ChildTask, { mode: 'watch' }>): Promise<void> {
  const store: Store = await openStore(task.target)
  const list = store.sessions()
  let armed: { id: string; length: number; calls: number } | undefined
  let ready = false
  list.subscribe((items, meta) => {
    if (meta.error) send({ kind: 'log', line: `watcher: list error ${meta.error.message}` })
    if (!ready && list.loaded) {
      ready = true
      send({ kind: 'ready', rows: items.length })
    }
    if (!armed) return
    armed.calls++
    const top = items[0]
    if (top && top.id === armed.id && top.length >= armed.length) {
      const calls = armed.calls
      armed = undefined
      send({ kind: 'seen', calls })
    }
  })
  process.on('message', (m: ToWatcher) => {
    if (m.kind === 'arm') {
      armed = { id: m.id, length: m.length, calls: 0 }
      send({ kind: 'armed' })
    } else if (m.kind === 'stop') {
      list.close()
      void store.close().finally(() => process.exit(0))
    }
  })
  process.on('disconnect', () => void store.close().finally(() => process.exit(0)))
}

const task = JSON.parse(process.argv[2]!) as ChildTask
;(task.mode === 'build' ? build(task) : watch(task)).catch((err: unknown) => {
  send({ kind: 'error', message: err instanceof Error ? (err.stack ?? err.message) : String(err) })
  process.exitCode = 1
  setTimeout(() => process.exit(1), 100)
})
