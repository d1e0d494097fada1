// The network side of a replication: the push and pull loops, live events, backoff. It runs
// where the engine runs (src/sync/runs.ts), on the engine's own calls.
import type { ChangeCursor, SyncConflict, SyncSkip } from '../core/changes'
import type { SessionId } from '../core/model'
import { SYNC_PATHS, SYNC_PROTOCOL, type PullAnswer, type PushAnswer } from './protocol'
import { extend, extendBy, trimKnown, type Extent } from './extent'
import { HttpFailure, Link, type Lane } from './link'
import type { LoopHost } from './types'
import { forkedIn, pullQuery, readEvents, serverCopy, told } from './pulls'
import { Again, readSaved, writeSaved } from './saved'

const REQUEST_TIMEOUT_MS = 30_000
/** Events per push (and about 4 MiB at most, changesSince's default): a catch-up in few requests. */
const PUSH_EVENTS = 4000
/** How long the server may hold a long-poll. */
const LONG_POLL_MS = 25_000

/** Runs the replication until `host.signal` aborts. */
export function runReplication(host: LoopHost): Promise<void> {
  return new Loop(host).run()
}

class Loop {
  #pushCursor: ChangeCursor | null = null
  /** The server's cursor: opaque, sealed by the server. */
  #pullCursor: string | null = null
  /** Sessions to send again whole (skipped by the server: locked there, or a gap), with their events skipped (pending until sent). */
  readonly #retryPush = new Again()
  /** The events of each session the server refused as a conflict: pending until their fork takes them. */
  readonly #stranded = new Map<SessionId, number>()
  /** Sessions to fetch again whole (skipped here: open for writing here). */
  readonly #retryPull = new Again()
  /**
   * Sessions in conflict with the server whose events here move to a fork (onConflict 'fork'),
   * with the conflicts found and not told yet (see #addConflicts): kept in the store with the
   * cursors until moved, so a restart (or a move cut half way) finishes it.
   */
  readonly #toFork = new Map<SessionId, SyncConflict[]>()
  /** What the server is known to hold (pushed and answered, or pulled): not pushed again. */
  readonly #serverHas = new Map<SessionId, Extent>()
  /** What is known to be here (the above, and what a push is sending): not imported when pulls carry it back to every reader. */
  readonly #hereHas = new Map<SessionId, Extent>()

  /** whenSynced() promises of rounds that pushed everything, waiting for the live stream to catch up. */
  readonly #liveWaiting: (() => void)[] = []

  /** Status, error and retryAt, and the backoff of both lanes. */
  readonly #link: Link

  constructor(readonly host: LoopHost) {
    this.#link = new Link(host)
  }

  async run(): Promise<void> {
    const stop = this.host.signal
    let live: Promise<void> | undefined
    try {
      const saved = await this.host.store.getMeta(this.host.key)
      if (saved) {
        const s = readSaved(saved)
        this.#pushCursor = s.push
        this.#pullCursor = s.pull
        for (const id of s.fork) this.#toFork.set(id, [])
        for (const id of s.pushAgain) this.#retryPush.add(id)
        for (const id of s.pullAgain) this.#retryPull.add(id)
      }
    } catch {
      // an unreadable record: start over (sending again what the server has is harmless)
    }
    while (!stop.aborted) {
      const waiting = this.host.takeWaiting()
      try {
        await this.#pushAll()
        if (this.host.options.live)
          live ??= this.#liveLoop().finally(() => {
            live = undefined
          })
        else await this.#pullAll(0)
        if (this.#toFork.size > 0) await this.#forkAll()
        if (this.#retryPull.size > 0) await this.#pullAgain()
        // Not `online` here: in live mode a round may send nothing (each request says so itself).
        this.#link.done('round')
        // Not synced while the server skipped a session (locked there), or events wait to move to a fork.
        if (this.#retryPush.size > 0 || this.#toFork.size > 0) this.host.returnWaiting(waiting)
        else if (!this.host.options.live || this.#liveCaughtUp) for (const f of waiting) f()
        else this.#liveWaiting.push(...waiting)
        await this.#sleep(this.host.options.pollMs ?? 250)
      } catch (err) {
        this.host.returnWaiting(waiting)
        if (stop.aborted) break
        await this.#link.retry('round', err, () => void this.#count())
        this.#counted++ // a count still under way is older than the round about to start
      }
    }
    await live?.catch(() => {})
  }

  #liveCaughtUp = false
  /** The live stream came back as something else than server-sent events: long-poll instead. */
  #sseUnavailable = false

  /** Resolves after `ms` (the poll), at a kick (a local append seen, the browser back online, close), whichever first. */
  #sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer)
        this.host.setKick(undefined)
        resolve()
      }
      const timer = setTimeout(done, ms)
      this.host.setKick(done)
      if (this.host.signal.aborted || this.host.consumeKick()) done()
    })
  }

  async #headers(): Promise<Record<string, string>> {
    const h = this.host.options.headers
    const given = typeof h === 'function' ? await h() : (h ?? {})
    return { ...given, 'sessionfold-sync': SYNC_PROTOCOL }
  }

  /** A request of `lane`; a 2xx answer tells the link the server is there. */
  async #request(path: string, init: RequestInit, timeout = REQUEST_TIMEOUT_MS, lane: Lane = 'round'): Promise<Response> {
    const signal = AbortSignal.any([this.host.signal, AbortSignal.timeout(timeout)])
    const headers = { ...(await this.#headers()), ...(init.headers as Record<string, string> | undefined) }
    const response = await this.host.fetch(`${this.host.base}${path}`, { ...init, headers, signal })
    if (!response.ok) {
      const body = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined
      throw new HttpFailure(response.status, body?.error?.code ?? `HTTP_${response.status}`, body?.error?.message ?? `the server answered ${response.status}`)
    }
    this.#link.succeeded(lane)
    return response
  }

  /** Rounds begun after a retry wait: a count begun before one is stale. */
  #counted = 0
  #counting = false
  #recount = false

  /** Recounts what waits to be pushed, while a retry waits (each local append kicks it): `pending` keeps up offline. */
  async #count(): Promise<void> {
    if (this.#counting) return void (this.#recount = true)
    this.#counting = true
    try {
      do {
        this.#recount = false
        const at = this.#counted
        const only = this.host.options.sessions
        // The round's own call, so that both count alike.
        const c = await this.host.store.changesSince(this.#pushCursor, only ? { sessions: only, maxEvents: PUSH_EVENTS } : { maxEvents: PUSH_EVENTS })
        const batch = trimKnown(c.batch, this.#serverHas)
        if (at === this.#counted) this.host.set({ pending: batch.sessions.reduce((n, e) => n + e.events.length, 0) + c.pending + this.#skipped() })
      } while (this.#recount)
    } catch {
      // counted again by the next round
    } finally {
      this.#counting = false
    }
  }

  /** Events the server skipped (sent again), or refused as a conflict (until their fork takes them): counted in `pending`. */
  #skipped(): number {
    return [...this.#stranded.values()].reduce((n, events) => n + events, this.#retryPush.events())
  }

  /** Keeps the cursors and what waits to be done again (with what a try under way has taken), for the next run. */
  async #save(): Promise<void> {
    const saved = writeSaved({
      push: this.#pushCursor,
      pull: this.#pullCursor,
      fork: [...this.#toFork.keys()],
      pushAgain: this.#retryPush.ids(),
      pullAgain: this.#retryPull.ids(),
    })
    await this.host.store.putMeta(this.host.key, saved)
  }

  /** Pushes everything local after the push cursor (and sessions to send again), batch by batch. */
  async #pushAll(): Promise<void> {
    const only = this.host.options.sessions
    if (this.#retryPush.size > 0) {
      // Counted by the push (and here again if skipped again).
      await this.#retryPush.take((ids) => this.#pushFrom({ v: 1, sessions: {} }, ids, false))
      await this.#save()
    }
    await this.#pushFrom(this.#pushCursor, only, true)
  }

  async #pushFrom(start: ChangeCursor | null, sessions: SessionId[] | undefined, advance: boolean): Promise<void> {
    let cursor = start
    for (;;) {
      const c = await this.host.store.changesSince(cursor, sessions ? { sessions, maxEvents: PUSH_EVENTS } : { maxEvents: PUSH_EVENTS })
      const batch = trimKnown(c.batch, this.#serverHas)
      const events = batch.sessions.reduce((n, e) => n + e.events.length, 0)
      this.host.set({ pending: events + c.pending + this.#skipped() })
      if (batch.sessions.length > 0 || batch.deleted) {
        // Known here before it is sent (the live stream may carry it back before the answer).
        for (const e of batch.sessions) extend(this.#hereHas, e.header.id, e.header.createdAt, e.from + e.events.length)
        const response = await this.#request(SYNC_PATHS.push, { method: 'POST', body: JSON.stringify(batch), headers: { 'content-type': 'application/json' } })
        const result = (await response.json()) as PushAnswer
        const left = new Set([...result.conflicts, ...result.skipped].map((x) => x.id))
        const sentOf = (id: SessionId) => batch.sessions.filter((e) => e.header.id === id).reduce((n, e) => n + e.events.length, 0)
        for (const s of result.skipped) {
          if (s.reason === 'deleted') {
            await this.#deleteHere(s)
            continue
          }
          this.#retryPush.add(s.id, Math.max(1, sentOf(s.id)))
        }
        await this.#addConflicts(result.conflicts)
        // With forks, what the server refused is not here as sent (another history is), and pending until moved.
        for (const c of this.host.options.onConflict === 'report' ? [] : result.conflicts) {
          this.#hereHas.delete(c.id)
          this.#stranded.set(c.id, (this.#stranded.get(c.id) ?? 0) + sentOf(c.id))
        }
        for (const e of batch.sessions) if (!left.has(e.header.id)) this.#learn(e.header.id, e.header.createdAt, e.from + e.events.length)
        this.host.set({ pushed: this.host.state().pushed + events })
      }
      cursor = c.cursor
      if (advance) {
        this.#pushCursor = cursor
        if (batch.sessions.length > 0 || c.batch.sessions.length > 0 || c.batch.deleted) await this.#save()
      }
      if (c.done) {
        this.host.set({ pending: this.#skipped() })
        return
      }
    }
  }

  /** The server holds `id` up to `length`, and so does this store. */
  #learn(id: SessionId, createdAt: number, length: number): void {
    extend(this.#serverHas, id, createdAt, length)
    extend(this.#hereHas, id, createdAt, length)
  }

  /** The server deleted this life of a session pushed: its copy goes too (while open for writing here, at the next try). */
  async #deleteHere(skip: SyncSkip): Promise<void> {
    if (!skip.tombstone) return
    const result = await this.host.store.applyChanges({ v: 1, sessions: [], deleted: [skip.tombstone] })
    for (const s of result.skipped) this.#retryPull.add(s.id)
  }

  /**
   * Reports conflicts (each once). With onConflict 'fork', an event conflict's session is queued
   * for its move, and the conflict told with its fork (or once the move must wait for a writer):
   * one found by a request that raced a move, with nothing left to move, is never told.
   */
  async #addConflicts(found: readonly SyncConflict[]): Promise<void> {
    if (found.length === 0) return
    const fork = this.host.options.onConflict !== 'report'
    this.host.set({ conflicts: told(this.host.state().conflicts, fork ? found.filter((c) => c.reason !== 'event') : found) })
    const before = this.#toFork.size
    for (const c of fork ? found : []) if (c.reason === 'event') this.#toFork.set(c.id, [...(this.#toFork.get(c.id) ?? []), c])
    if (this.#toFork.size > before) await this.#save()
  }

  /**
   * Moves this store's events of each conflicted session to a fork, the session taking the
   * server's whole copy (DESIGN §15); one open for writing here waits for its writer to close.
   */
  async #forkAll(): Promise<void> {
    for (const [id, held] of [...this.#toFork]) {
      const waits = await this.host.store.isOpenForWriting(id)
      const entry = waits ? undefined : await serverCopy((cursor) => this.#pull(cursor, [id]), id)
      const outcome = waits ? 'locked' : entry ? await this.host.store.forkConflict({ v: 1, sessions: [entry] }) : 'none'
      if (outcome !== 'none') this.host.set({ conflicts: told(this.host.state().conflicts, held) })
      if (outcome === 'locked') continue // told now (once: told() keeps each conflict once), moved when let go
      this.#toFork.delete(id)
      this.#stranded.delete(id)
      // Then pulled whole: what the server got since its copy was read (refused here as conflicts).
      this.#hereHas.delete(id)
      this.#retryPull.add(id)
      // 'none': this copy is a prefix of the server's (found by a request that raced a move), or is gone.
      const { conflicts, pulled } = this.host.state()
      if (outcome === 'none') this.host.set({ conflicts: conflicts.filter((c) => c.id !== id || c.forkedAs) })
      else this.host.set({ conflicts: forkedIn(conflicts, entry!.header, outcome), pulled: pulled + entry!.events.length - outcome.at })
      await this.#save()
    }
  }

  /** A pull of the server's changes after `cursor` (null: from the start), of `ids` only when given, held up to `wait` ms. */
  async #pull(cursor: string | null, ids: readonly SessionId[] | undefined, wait = 0, lane: Lane = 'round'): Promise<PullAnswer> {
    const response = await this.#request(`${SYNC_PATHS.pull}${pullQuery(cursor, ids, wait)}`, { method: 'GET' }, REQUEST_TIMEOUT_MS + wait, lane)
    return (await response.json()) as PullAnswer
  }

  /** Applies an answer of the server here, and keeps its cursor. */
  async #apply(answer: PullAnswer): Promise<void> {
    // Less what is known to be here already: this device's own pushes, which the server's
    // pulls and live stream carry back to every reader, this one included.
    const batch = trimKnown(answer.batch, this.#hereHas)
    if (batch.sessions.length > 0 || batch.deleted) {
      extendBy(this.#serverHas, batch) // before it lands: a push round meanwhile must not send it back
      const result = await this.host.store.applyChanges(batch)
      await this.#addConflicts(result.conflicts)
      // A session deleted here stays so (this store's tombstone goes to the server with its next push).
      for (const s of result.skipped) if (s.reason !== 'deleted') this.#retryPull.add(s.id)
      const left = new Set([...result.conflicts, ...result.skipped].map((x) => x.id))
      for (const e of batch.sessions) if (!left.has(e.header.id)) this.#learn(e.header.id, e.header.createdAt, e.from + e.events.length)
      this.host.set({ pulled: this.host.state().pulled + result.copiedEvents })
    }
    this.#pullCursor = answer.cursor || null
    await this.#save()
  }

  async #pullAll(wait: number): Promise<void> {
    for (;;) {
      const answer = await this.#pull(this.#pullCursor, this.host.options.sessions, wait)
      await this.#apply(answer)
      if (answer.done) return
    }
  }

  /** Sessions this store skipped (open for writing here), fetched again whole from the server. */
  async #pullAgain(): Promise<void> {
    await this.#retryPull.take(async (ids) => {
      let cursor: string | null = null // no cursor, these sessions only: each sent whole
      for (;;) {
        const answer = await this.#pull(cursor, ids)
        if (answer.batch.sessions.length > 0 || answer.batch.deleted) {
          extendBy(this.#serverHas, answer.batch)
          const result = await this.host.store.applyChanges(answer.batch)
          await this.#addConflicts(result.conflicts)
          for (const s of result.skipped) if (s.reason !== 'deleted') this.#retryPull.add(s.id)
          this.host.set({ pulled: this.host.state().pulled + result.copiedEvents })
        }
        cursor = answer.cursor || null
        if (answer.done) return
      }
    })
    await this.#save()
  }

  /** The server's changes as server-sent events, reconnecting with backoff until closed. */
  async #liveLoop(): Promise<void> {
    const stop = this.host.signal
    while (!stop.aborted) {
      try {
        if (this.host.options.live === 'long-poll' || this.#sseUnavailable) {
          // Long-poll: the server holds each pull until something changes (or LONG_POLL_MS passes).
          const wait = this.#liveCaughtUp ? LONG_POLL_MS : 0
          const answer = await this.#pull(this.#pullCursor, this.host.options.sessions, wait, 'live')
          await this.#apply(answer)
          this.#liveCaughtUp = answer.done
          if (this.#liveCaughtUp) for (const f of this.#liveWaiting.splice(0)) f()
          continue
        }
        const signal = stop
        const response = await this.host.fetch(`${this.host.base}${SYNC_PATHS.live}${pullQuery(this.#pullCursor, this.host.options.sessions)}`, {
          headers: await this.#headers(),
          signal,
        })
        if (response.ok && !(response.headers.get('content-type') ?? '').includes('text/event-stream')) {
          // Something between us and the server does not stream: long-poll from now on.
          await response.body?.cancel().catch(() => {})
          this.#sseUnavailable = true
          continue
        }
        if (!response.ok || !response.body) {
          const body = (await response.json().catch(() => undefined)) as { error?: { code?: string; message?: string } } | undefined
          throw new HttpFailure(
            response.status,
            body?.error?.code ?? `HTTP_${response.status}`,
            body?.error?.message ?? `the server answered ${response.status}`,
          )
        }
        // Online at the first message, not at the headers: a server whose store fails answers
        // 200 and then an error event, and that is offline throughout.
        let first = true
        for await (const message of readEvents(response.body)) {
          if (first && message.event !== 'error') this.#link.succeeded('live')
          first = false
          if (message.event === 'changes') {
            const answer = JSON.parse(message.data) as PullAnswer
            await this.#apply(answer)
            this.#liveCaughtUp = answer.done
          } else if (message.event === 'cursor') {
            const data = JSON.parse(message.data) as { cursor: string; done?: boolean }
            this.#pullCursor = data.cursor || this.#pullCursor
            this.#liveCaughtUp = data.done !== false
            await this.#save()
          } else if (message.event === 'error') {
            const { error } = JSON.parse(message.data) as { error: { code: string; message: string } }
            throw new HttpFailure(503, error.code, error.message)
          }
          if (this.#liveCaughtUp) for (const f of this.#liveWaiting.splice(0)) f()
        }
        // Ended before a word (a proxy cutting it): a failure to back off from, not a reconnect at once, forever.
        if (first) throw new Error('the live stream ended before its first message')
      } catch (err) {
        if (stop.aborted) return
        this.#liveCaughtUp = false
        await this.#link.retry('live', err)
      }
    }
  }
}
