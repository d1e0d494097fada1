// Replications with sync servers (store.connect), run where the engine runs: one per store and
// server (a second connect to the same server joins the first), on the engine's own calls. In
// browsers, tabs whose engines are separate Web Workers elect one runner per database and
// server (Web Locks); the others follow the runner's state over a BroadcastChannel and ask it to
// push at once. With a SharedWorker, the tabs share the engine and so the replication.
import type { ReplicationState } from './types'
import type { ConnectOptions, LoopHost } from './types'
import { errorOf } from './link'
import { runReplication } from './loop'
import type { ReplicationEvent, ReplicationSpec } from '../core/protocol'
import type { Engine } from '../engine'

/** How long a request waits for the app's headers function before it fails (and is retried). */
const HEADERS_TIMEOUT_MS = 30_000

const INITIAL: ReplicationState = { status: 'connecting', pending: 0, conflicts: [], pushed: 0, pulled: 0 }

/** One client's view of a run: its long-polls and the headers it was asked for. */
interface Client {
  id: number
  run: Run
  /** Whether this client's headers come from its function (asked per request). */
  asks: boolean
  /** The newest header ticket this client was told of: each is told once, not at every poll while it is open. */
  told: number
  wake?: () => void
}

interface Locks {
  request(name: string, options: { signal?: AbortSignal }, fn: () => Promise<void>): Promise<void>
}

class Run {
  state: ReplicationState = INITIAL
  version = 0
  readonly clients = new Set<Client>()
  readonly stop = new AbortController()
  done: Promise<void> = Promise.resolve()
  /** whenSynced() resolvers not yet handed to a round. */
  readonly waiting: (() => void)[] = []
  #kick: (() => void) | undefined
  #kicked = false
  /** Header requests waiting for a client: ticket → resolve. */
  readonly tickets = new Map<number, { resolve: (h: Record<string, string>) => void; reject: (e: Error) => void }>()
  #ticket = 0
  /** As a follower: the runner's round count, and its channel. */
  #channel: BroadcastChannel | undefined
  #rounds = 0
  #followerWaits: { after: number; resolve: () => void }[] = []
  /** The live loop's retry waits, ended when the network comes back. */
  readonly #online = new Set<() => void>()

  constructor(
    readonly key: string,
    readonly spec: ReplicationSpec,
    private readonly engine: Engine,
    private readonly scope: string,
    private readonly fetchFn: typeof fetch | undefined,
  ) {}

  set(patch: Partial<ReplicationState>): void {
    const next = { ...this.state, ...patch }
    if (patch.status && patch.status !== 'offline' && patch.status !== 'error') {
      delete next.error
      delete next.retryAt
    }
    if (JSON.stringify(next) === JSON.stringify(this.state)) return
    this.state = next
    this.bump()
  }

  bump(): void {
    this.version++
    for (const c of this.clients) c.wake?.()
  }

  kick(): void {
    if (this.#kick) this.#kick()
    else this.#kicked = true
    this.#channel?.postMessage({ kick: true })
  }

  /** Asks a client whose headers are a function for fresh ones. */
  headers(): Promise<Record<string, string>> {
    const asking = [...this.clients].reverse().find((c) => c.asks)
    if (!asking) return Promise.resolve(this.spec.headers ?? {})
    const ticket = ++this.#ticket
    return new Promise((resolve, reject) => {
      // An app whose function never answers (or whose page went away) fails the request, not the loop.
      const timer = setTimeout(() => {
        this.tickets.delete(ticket)
        reject(new Error(`the headers function gave no answer in ${HEADERS_TIMEOUT_MS / 1000} s`))
      }, HEADERS_TIMEOUT_MS)
      this.tickets.set(ticket, {
        resolve: (h) => {
          clearTimeout(timer)
          resolve(h)
        },
        reject: (e) => {
          clearTimeout(timer)
          reject(e)
        },
      })
      this.bump()
    })
  }

  get asked(): number | undefined {
    return this.tickets.size > 0 ? Math.max(...this.tickets.keys()) : undefined
  }

  synced(): Promise<void> {
    if (this.#channel && !this.leading) {
      const after = this.#rounds + 1
      return new Promise((resolve) => {
        this.#followerWaits.push({ after, resolve })
        this.kick()
      })
    }
    return new Promise((resolve) => {
      this.waiting.push(resolve)
      this.kick()
    })
  }

  leading = false

  /** Back online: the loop's sleep and the live loop's retry wait end now (in the tab that runs it). */
  online(): void {
    this.kick()
    for (const f of [...this.#online]) f()
    this.#channel?.postMessage({ online: true })
  }

  start(): void {
    const options: ConnectOptions = {
      headers: () => this.headers(),
      ...(this.spec.options.sessions ? { sessions: this.spec.options.sessions } : {}),
      ...(this.spec.options.live !== undefined ? { live: this.spec.options.live } : {}),
      ...(this.spec.options.pollMs !== undefined ? { pollMs: this.spec.options.pollMs } : {}),
      ...(this.spec.options.maxBackoffMs !== undefined ? { maxBackoffMs: this.spec.options.maxBackoffMs } : {}),
      ...(this.spec.options.onConflict !== undefined ? { onConflict: this.spec.options.onConflict } : {}),
    }
    const engine = this.engine
    let rounds = 0
    const host: LoopHost = {
      store: {
        changesSince: (cursor, o) => engine.changesSince(cursor, o),
        applyChanges: (batch) => engine.applyChanges(batch),
        forkConflict: (serverCopy) => engine.forkConflict(serverCopy),
        isOpenForWriting: (id) => engine.locks.isHeld(id),
        getMeta: (key) => engine.metaRecords().getMeta(key),
        putMeta: (key, value) => engine.metaRecords().putMeta(key, value),
      },
      base: this.spec.url,
      key: this.key,
      options,
      fetch: this.fetchFn ?? globalThis.fetch.bind(globalThis),
      signal: this.stop.signal,
      state: () => this.state,
      set: (patch) => {
        this.set(patch)
        this.#channel?.postMessage({ state: this.state, rounds })
      },
      takeWaiting: () => {
        rounds++
        this.#channel?.postMessage({ state: this.state, rounds })
        return this.waiting.splice(0)
      },
      returnWaiting: (waiting) => void this.waiting.unshift(...waiting),
      setKick: (kick) => {
        this.#kick = kick
      },
      consumeKick: () => {
        const was = this.#kicked
        this.#kicked = false
        return was
      },
      whenOnline: (f) => {
        this.#online.add(f)
        return () => void this.#online.delete(f)
      },
    }
    // Back online (a page's or a Web Worker's global fires it; Node has none): try at once,
    // rather than at the end of a backoff that may have grown to maxBackoffMs.
    const target = globalThis as { addEventListener?: (type: string, f: () => void) => void; removeEventListener?: (type: string, f: () => void) => void }
    const online = () => this.online()
    target.addEventListener?.('online', online)
    this.stop.signal.addEventListener('abort', () => target.removeEventListener?.('online', online), { once: true })
    const locks = (globalThis as { navigator?: { locks?: Locks } }).navigator?.locks
    // The loop answers its own failures; one of its own (a bug) is the replication's error state.
    const failed = (err: unknown) => {
      if (!this.stop.signal.aborted) this.set({ status: 'error', error: errorOf(err) })
    }
    if (!locks || typeof BroadcastChannel === 'undefined') {
      this.leading = true
      this.done = runReplication(host).catch(failed)
      return
    }
    // Tabs with engines of their own: one runs it, the others follow its state.
    const name = `sessionfold:replication:${this.scope}:${this.key}`
    const channel = new BroadcastChannel(name)
    this.#channel = channel
    channel.onmessage = (event: MessageEvent) => {
      const m = event.data as { kick?: boolean; online?: boolean; state?: ReplicationState; rounds?: number }
      if ((m.kick || m.online) && this.leading) {
        if (this.#kick) this.#kick()
        else this.#kicked = true
      }
      if (m.online && this.leading) for (const f of [...this.#online]) f()
      if (m.state && !this.leading) {
        this.#rounds = m.rounds ?? this.#rounds
        this.state = m.state
        this.bump()
        for (const w of this.#followerWaits.splice(0)) {
          if (this.#rounds > w.after && m.state.pending === 0 && m.state.status === 'online') w.resolve()
          else this.#followerWaits.push(w)
        }
      }
    }
    this.done = locks
      .request(name, { signal: this.stop.signal }, async () => {
        this.leading = true
        for (const w of this.#followerWaits.splice(0)) this.waiting.push(w.resolve)
        await runReplication(host).catch(failed)
      })
      .catch(failed) // aborted while waiting for the lock (closed), or refused (an opaque origin)
  }

  async close(): Promise<void> {
    this.stop.abort()
    this.#kick?.()
    for (const t of this.tickets.values()) t.reject(new Error('the replication is closed'))
    this.tickets.clear()
    await this.done
    this.#channel?.close()
    this.bump()
  }
}

/** The replications of one engine. */
export class ReplicationHub {
  readonly #runs = new Map<string, Run>()
  readonly #clients = new Map<number, Client>()
  #next = 1

  constructor(
    private readonly engine: Engine,
    private readonly scope: string,
  ) {
    engine.written.add(() => {
      for (const run of this.#runs.values()) run.kick()
    })
  }

  connect(spec: ReplicationSpec, fetchFn?: typeof fetch): number {
    const key = spec.key
    let run = this.#runs.get(key)
    if (!run || run.stop.signal.aborted) {
      run = new Run(key, spec, this.engine, this.scope, fetchFn)
      this.#runs.set(key, run)
      run.start()
    }
    const client: Client = { id: this.#next++, run, asks: spec.headersFromClient, told: 0 }
    run.clients.add(client)
    this.#clients.set(client.id, client)
    return client.id
  }

  /** The run's state once its version is past `seen` (or a header request is open), or once it is closed. */
  next(id: number, seen: number): Promise<ReplicationEvent> {
    const client = this.#clients.get(id)
    if (!client) return Promise.resolve({ version: seen + 1, state: INITIAL, closed: true })
    const untold = () => (client.asks ? (client.run.asked ?? 0) : 0) > client.told
    const answer = (): ReplicationEvent => {
      const asked = untold() ? client.run.asked : undefined
      if (asked !== undefined) client.told = asked
      return {
        version: client.run.version,
        state: client.run.state,
        ...(asked !== undefined ? { headersWanted: asked } : {}),
        ...(this.#clients.has(id) ? {} : { closed: true }),
      }
    }
    if (client.run.version > seen || untold()) return Promise.resolve(answer())
    return new Promise((resolve) => {
      client.wake = () => {
        client.wake = undefined
        resolve(answer())
      }
    })
  }

  headers(id: number, ticket: number, headers: Record<string, string> | { error: string }): void {
    const client = this.#clients.get(id)
    if (!client?.run.tickets.has(ticket)) return
    // A client is told only the newest ticket: its answer serves the older ones still open too.
    for (const [n, t] of client.run.tickets) {
      if (n > ticket) continue
      client.run.tickets.delete(n)
      if ('error' in headers && typeof headers.error === 'string' && Object.keys(headers).length === 1)
        t.reject(new Error(`the headers function failed: ${headers.error}`))
      else t.resolve(headers as Record<string, string>)
    }
  }

  /** The network is back, as a client's page saw it: the run tries at once. */
  online(id: number): void {
    this.#clients.get(id)?.run.online()
  }

  synced(id: number): Promise<void> {
    const client = this.#clients.get(id)
    return client ? client.run.synced() : Promise.resolve()
  }

  async close(id: number): Promise<void> {
    const client = this.#clients.get(id)
    if (!client) return
    this.#clients.delete(id)
    client.run.clients.delete(client)
    client.wake?.()
    if (client.run.clients.size === 0) {
      this.#runs.delete(client.run.key)
      await client.run.close()
    }
  }

  async closeAll(ids: Iterable<number>): Promise<void> {
    await Promise.all([...ids].map((id) => this.close(id)))
  }
}
