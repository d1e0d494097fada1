// `sessionfold events <id>`: events as NDJSON, optionally following another process's appends.
// Read-only.
import { SessionfoldError } from '../core/errors'
import type { SessionId } from '../core/model'
import type { Engine } from '../engine'
import { write, type Io } from './output'

export async function events(engine: Engine, io: Io, id: SessionId, args: { from?: number; to?: number; follow: boolean }): Promise<number> {
  let at = args.from ?? 0
  const end = args.to
  const info = await engine.reader.find(id)
  if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" does not exist`, { sessionId: id })
  const print = async (to: number) => {
    if (at >= to) return
    for await (const page of engine.reader.pages(id, { from: at, to })) {
      // With --definitions, each event as an app reads it: at its type's latest version.
      const shown = engine.events.versioned ? page.map(engine.events.read) : page
      await write(io.stdout, shown.map((e) => `${JSON.stringify(e)}\n`).join(''))
      at = page[page.length - 1]!.seq + 1
    }
  }
  await print(end === undefined ? info.length : Math.min(end, info.length))
  if (!args.follow) return 0
  // Follow: another process appends to the log; its length is polled (a stat while idle).
  let stop = false
  void io.interrupted.then(() => (stop = true))
  while (!stop && (end === undefined || at < end)) {
    const now = await engine.reader.find(id)
    if (!now) throw new SessionfoldError('SESSION_NOT_FOUND', `session "${id}" was deleted`, { sessionId: id })
    await print(end === undefined ? now.length : Math.min(end, now.length))
    await Promise.race([io.interrupted, new Promise((r) => setTimeout(r, 100))])
  }
  return 0
}
