// examples/electron-sync/link.ts
// Keeps two stores in sync over a message port: Electron's MessagePortMain / MessagePort
// pair (or any postMessage channel). Each side runs the same code: it sends its own changes
// (store.changesSince) and applies the other side's (store.applyChanges). Batches are plain
// JSON, bounded in events and bytes; the cursor advances only once the other side has
// applied a batch, so a batch lost with a crashed window is simply sent again.
import type { ApplyResult, ChangeBatch, SessionMapCursor, Store, SyncConflict } from 'sessionfold'

/** The part of a MessagePort this needs (DOM MessagePort, Electron's, worker_threads'). */
export interface Port {
  postMessage(message: unknown): void
  addEventListener(type: 'message', listener: (event: { data: unknown }) => void): void
  start?(): void
}

type Message =
  | { kind: 'batch'; n: number; batch: ChangeBatch }
  | { kind: 'applied'; n: number; result: ApplyResult }
  | { kind: 'failed'; n: number; message: string }

export interface Link {
  /** Sends everything this side has that the other was not sent yet; resolves with the batches sent. */
  push(): Promise<number>
  /** Stops the background loop (pending work finishes first). */
  stop(): Promise<void>
  /** Conflicts the other side reported for what this side sent. */
  readonly conflicts: SyncConflict[]
  /** Batches the other side has applied so far. */
  readonly sent: number
}

export function linkStore(store: Store, port: Port, options: { everyMs?: number } = {}): Link {
  // Each pass asks every session its length (a stat per session on fs): poll gently.
  const everyMs = options.everyMs ?? 200
  // A session-map cursor: this link merges into it what the other side sent us.
  let cursor: SessionMapCursor | null = null
  // What the other side is known to hold because it sent it to us: never sent back to it.
  const peerHas: SessionMapCursor['sessions'] = {}
  let nextBatch = 1
  let applied = 0
  const replies = new Map<number, (m: Message) => void>()
  const conflicts: SyncConflict[] = []
  let running = true
  let chain: Promise<unknown> = Promise.resolve()

  port.addEventListener('message', (event) => {
    const m = event.data as Message
    if (m.kind === 'batch') {
      // The other side's changes: applyChanges checks the batch, so a bad one is refused whole.
      store.applyChanges(m.batch).then(
        (result) => {
          const left = new Set([...result.conflicts, ...result.skipped].map((x) => x.id))
          for (const e of m.batch.sessions) {
            if (left.has(e.header.id)) continue
            const known = peerHas[e.header.id]
            const end = e.from + e.events.length
            if (!known || known[0] !== e.header.createdAt || known[1] < end) peerHas[e.header.id] = [e.header.createdAt, end]
          }
          port.postMessage({ kind: 'applied', n: m.n, result } satisfies Message)
        },
        (err: Error) => port.postMessage({ kind: 'failed', n: m.n, message: err.message } satisfies Message),
      )
    } else {
      replies.get(m.n)?.(m)
      replies.delete(m.n)
    }
  })
  port.start?.()

  const send = (batch: ChangeBatch) =>
    new Promise<Message>((resolve) => {
      const n = nextBatch++
      replies.set(n, resolve)
      port.postMessage({ kind: 'batch', n, batch } satisfies Message)
    })

  async function pushAll(): Promise<number> {
    let sent = 0
    for (;;) {
      const changes = await store.changesSince(withPeer(cursor))
      if (changes.batch.sessions.length === 0) {
        cursor = changes.cursor as SessionMapCursor
        return sent
      }
      const reply = await send(changes.batch)
      if (reply.kind === 'failed') throw new Error(`the other side refused a batch: ${reply.message}`)
      if (reply.kind !== 'applied') throw new Error(`unexpected reply ${reply.kind}`)
      sent++
      applied++
      const next = changes.cursor as SessionMapCursor
      // Not taken (a writer holds it over there, ...): send that session again next time.
      for (const s of reply.result.skipped) delete next.sessions[s.id]
      conflicts.push(...reply.result.conflicts)
      cursor = next
    }
  }

  /** The cursor, moved past what the other side sent us (a cursor may only say less than is there). */
  const withPeer = (c: SessionMapCursor | null): SessionMapCursor => {
    const out: SessionMapCursor = { ...c, v: 1, sessions: { ...c?.sessions } }
    for (const [id, [createdAt, length]] of Object.entries(peerHas)) {
      const mine = out.sessions[id]
      if (!mine || (mine[0] === createdAt && mine[1] < length)) out.sessions[id] = [createdAt, length]
    }
    return out
  }

  /** One push at a time, whether from the loop or from push(). */
  const push = () => {
    const p = chain.then(pushAll)
    chain = p.catch(() => {})
    return p
  }

  const loop = (async () => {
    while (running) {
      await push().catch((err: Error) => console.warn(`sync: ${err.message}`))
      await new Promise((r) => setTimeout(r, everyMs))
    }
  })()

  return {
    push,
    async stop() {
      running = false
      await loop
    },
    conflicts,
    get sent() {
      return applied
    },
  }
}
