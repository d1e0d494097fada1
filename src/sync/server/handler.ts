// createSyncHandler: the server side of HTTP sync, as a Fetch-API handler. It keeps nothing of
// its own between requests (cursors travel with the clients, data lives in the store), so
// several server processes over one PostgreSQL store serve the same clients.
import type { ChangeBatch, ChangeCursor, Changes } from '../../core/changes'
import type { Store } from '../../client/store'
import { isSessionfoldError } from '../../core/errors'
import type { SessionId } from '../../core/model'
import { isSessionId } from '../../core/limits'
import { describe, isPlainObject } from '../../core/validate'
import { DEFAULT_MAX_BODY_BYTES, MAX_CURSOR_CHARS, MAX_WAIT_MS, SYNC_PATHS, SYNC_PROTOCOL, type PullAnswer, type SyncErrorBody } from '../protocol'
import { createCursorSeal } from './cursor-seal'
import { Waiters } from './waiters'
import { readBytes } from './body'

/** What `authorize` is asked: may this request read (or write) this session, or list (no `sessionId`)? */
export interface AuthorizeRequest {
  /** The incoming request (its headers carry the caller's token). */
  request: Request
  /** The session, or undefined for a listing, a pull or a live stream as a whole. */
  sessionId: SessionId | undefined
  /** `read` (pull, live, listing) or `write` (push: appending to or creating the session). */
  access: 'read' | 'write'
}

/**
 * Decides one request: `true` allows it; `false` refuses it (403); `'unauthenticated'` refuses
 * it as coming from nobody known (401). A throw is answered 401 too, and nothing of it is shown.
 */
export type Authorize = (request: AuthorizeRequest) => boolean | 'unauthenticated' | Promise<boolean | 'unauthenticated'>

/** Options of {@link createSyncHandler}. */
export interface SyncHandlerOptions {
  /** The store clients sync with: any store (fs, PostgreSQL for several server processes, memory). */
  store: Store
  /** Asked on every request, per session and access; see {@link Authorize}. */
  authorize: Authorize
  /** The path the handler is mounted under (default ''): `${basePath}/push`, `/pull`, `/live`, `/sessions`. */
  basePath?: string
  /** Largest push body read, in bytes (default 8 MiB); a larger one is 400 and writes nothing. */
  maxBodyBytes?: number
  /** Events per pull or live message (default 4000; at most about 4 MiB of events either way). */
  maxEvents?: number
  /** How often a waiting pull or a live stream looks for writes made by other processes (default 250 ms). Pushes through this handler wake them at once. */
  pollMs?: number
  /** A live stream ends after this long (default 5 minutes), and its client reconnects: load balancers rebalance. */
  liveMs?: number
  /** A comment line on an idle live stream this often (default 15 s), so proxies keep it open. */
  heartbeatMs?: number
  /** `Access-Control-Allow-Origin` to send (and preflights to answer), for pages of another origin. */
  allowOrigin?: string
  /**
   * The key that seals cursors (clients can neither read nor forge them). Give every server
   * process of one store the same secret; without one, each handler makes a random key, and a
   * cursor made by another process (or before a restart) starts its client over.
   */
  cursorSecret?: string | Uint8Array
}

/** A Fetch-API request handler: mount it in any server that speaks `Request`/`Response`. */
export type SyncHandler = (request: Request) => Promise<Response>

const KNOWN = ['store', 'authorize', 'basePath', 'maxBodyBytes', 'maxEvents', 'pollMs', 'liveMs', 'heartbeatMs', 'allowOrigin', 'cursorSecret']
const MAX_LISTED_SESSIONS = 1000

class Refusal extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message)
  }
}

/**
 * The server side of HTTP sync (see the guide's "Sync with a server"): `POST /push` applies a
 * client's changes, `GET /pull` answers what changed after the client's cursor (`?wait=ms`
 * holds the answer until something does), `GET /live` streams it as server-sent events, and
 * `GET /sessions` lists the headers the caller may read. Every request goes through
 * `authorize`; refused ones get 401/403 and no data.
 *
 * @example
 * const handler = createSyncHandler({ store, authorize: ({ request, sessionId }) => mayAccess(request, sessionId) })
 * http.createServer(toNodeListener(handler)).listen(8787, '127.0.0.1')
 */
export function createSyncHandler(options: SyncHandlerOptions): SyncHandler {
  if (!isPlainObject(options as unknown)) throw new TypeError(`createSyncHandler needs options, got ${describe(options)}`)
  for (const key of Object.keys(options)) if (!KNOWN.includes(key)) throw new TypeError(`createSyncHandler has no option ${describe(key)}`)
  const { store, authorize } = options
  if (typeof authorize !== 'function') throw new TypeError('createSyncHandler needs an authorize function: every request is authorized')
  if (!store || typeof store.changesSince !== 'function') throw new TypeError('createSyncHandler needs a store made by openStore()')
  const base = (options.basePath ?? '').replace(/\/+$/, '')
  const maxBody = options.maxBodyBytes ?? DEFAULT_MAX_BODY_BYTES
  const maxEvents = options.maxEvents ?? 4000
  const pollMs = options.pollMs ?? 250
  const liveMs = options.liveMs ?? 5 * 60_000
  const heartbeatMs = options.heartbeatMs ?? 15_000
  const waiters = new Waiters()
  const seal = createCursorSeal(options.cursorSecret)

  const cors = (headers: Record<string, string>): Record<string, string> =>
    options.allowOrigin === undefined
      ? headers
      : {
          ...headers,
          'access-control-allow-origin': options.allowOrigin,
          'access-control-expose-headers': 'sessionfold-sync',
          vary: 'origin',
        }
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), {
      status,
      headers: cors({ 'content-type': 'application/json', 'cache-control': 'no-store', 'sessionfold-sync': SYNC_PROTOCOL }),
    })
  const refuse = (status: number, code: string, message: string) => json(status, { error: { code, message } } satisfies SyncErrorBody)

  /** Asks authorize; refuses (401/403) unless it allows. */
  async function allow(request: Request, sessionId: SessionId | undefined, access: 'read' | 'write'): Promise<void> {
    let answer: boolean | 'unauthenticated'
    try {
      answer = await authorize({ request, sessionId, access })
    } catch {
      answer = 'unauthenticated'
    }
    if (answer === true) return
    if (answer === 'unauthenticated') throw new Refusal(401, 'UNAUTHORIZED', 'this request is not authenticated')
    throw new Refusal(403, 'FORBIDDEN', sessionId === undefined ? `${access} refused` : `${access} of session ${JSON.stringify(sessionId)} refused`)
  }

  /** The batch with only the sessions (and tombstones) this request may read (authorize asked once per session). */
  async function readable(request: Request, batch: ChangeBatch, cache: Map<SessionId, boolean>): Promise<ChangeBatch> {
    const may = async (id: SessionId) => {
      if (!cache.has(id)) {
        let ok = false
        try {
          ok = (await authorize({ request, sessionId: id, access: 'read' })) === true
        } catch {
          ok = false
        }
        cache.set(id, ok)
      }
      return cache.get(id) === true
    }
    const kept = []
    for (const entry of batch.sessions) if (await may(entry.header.id)) kept.push(entry)
    const deleted = []
    for (const t of batch.deleted ?? []) if (await may(t.id)) deleted.push(t)
    return { v: 1, sessions: kept, ...(deleted.length > 0 ? { deleted } : {}) }
  }

  /** Reads the query of a pull or live request. */
  async function pullQuery(url: URL): Promise<{ cursor: ChangeCursor | null; sessions?: SessionId[]; wait: number }> {
    const raw = url.searchParams.get('cursor')
    let cursor: ChangeCursor | null = null
    if (raw !== null && raw !== '') {
      if (raw.length > MAX_CURSOR_CHARS || !/^[A-Za-z0-9_-]+$/.test(raw))
        throw new Refusal(400, 'INVALID_ARGUMENT', `the cursor must be one this server made (base64url, at most ${MAX_CURSOR_CHARS} characters)`)
      cursor = await seal.open(raw) // null when it does not open: start over
    }
    const list = url.searchParams.get('sessions')
    let sessions: SessionId[] | undefined
    if (list !== null) {
      sessions = list.split(',')
      if (sessions.length > MAX_LISTED_SESSIONS || !sessions.every(isSessionId))
        throw new Refusal(400, 'INVALID_ARGUMENT', `sessions must be at most ${MAX_LISTED_SESSIONS} session ids, comma-separated`)
    }
    const waitText = url.searchParams.get('wait') ?? '0'
    const wait = Number(waitText)
    if (!/^\d{1,6}$/.test(waitText) || wait > MAX_WAIT_MS)
      throw new Refusal(400, 'INVALID_ARGUMENT', `wait must be a whole number of milliseconds up to ${MAX_WAIT_MS}`)
    return { cursor, sessions, wait }
  }

  /**
   * The next non-empty answer after `cursor` that this request may read, or an empty one once
   * `deadline` passes (or `signal` aborts). Sessions it may not read are passed over: the
   * cursor moves past them.
   */
  async function nextChanges(
    request: Request,
    cursor: ChangeCursor | null,
    sessions: SessionId[] | undefined,
    deadline: number,
    signal: AbortSignal,
    cache: Map<SessionId, boolean>,
  ): Promise<{ batch: ChangeBatch; cursor: ChangeCursor | null; done: boolean }> {
    for (;;) {
      const seen = waiters.generation
      const c: Changes = await store.changesSince(cursor, sessions ? { maxEvents, sessions } : { maxEvents })
      const batch = await readable(request, c.batch, cache)
      cursor = c.cursor
      const some = batch.sessions.length > 0 || batch.deleted !== undefined
      if (some || !c.done) {
        if (some || Date.now() >= deadline) return { batch, cursor, done: c.done }
        continue // only others' sessions: go on at once
      }
      if (Date.now() >= deadline || signal.aborted) return { batch, cursor, done: true }
      await waiters.wait(seen, Math.min(pollMs, deadline - Date.now()), signal)
    }
  }

  async function pull(request: Request, url: URL): Promise<Response> {
    await allow(request, undefined, 'read')
    const { cursor, sessions, wait } = await pullQuery(url)
    const answer = await nextChanges(request, cursor, sessions, Date.now() + wait, request.signal, new Map())
    return json(200, { ...answer, cursor: answer.cursor ? await seal.seal(answer.cursor) : '' } satisfies PullAnswer)
  }

  async function live(request: Request, url: URL): Promise<Response> {
    await allow(request, undefined, 'read')
    const query = await pullQuery(url)
    const encoder = new TextEncoder()
    const stop = new AbortController()
    request.signal.addEventListener('abort', () => stop.abort(), { once: true })
    const cache = new Map<SessionId, boolean>()
    const ends = Date.now() + liveMs
    let cursor = query.cursor
    let first = true
    // Pulled: the next message is made only once the client has taken the last one, so a slow
    // client holds up its own stream, never the server's memory.
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const send = (text: string) => controller.enqueue(encoder.encode(text))
          if (stop.signal.aborted || Date.now() >= ends) return controller.close()
          try {
            // The first answer at once (the client learns where it stands), later ones when something changes.
            const deadline = first ? Date.now() : Math.min(ends, Date.now() + heartbeatMs)
            const answer = await nextChanges(request, cursor, query.sessions, deadline, stop.signal, cache)
            if (stop.signal.aborted) return controller.close()
            cursor = answer.cursor
            const sealed = cursor ? await seal.seal(cursor) : ''
            if (first) send('retry: 1000\n\n')
            first = false
            if (answer.batch.sessions.length > 0 || answer.batch.deleted)
              send(`event: changes\ndata: ${JSON.stringify({ ...answer, cursor: sealed } satisfies PullAnswer)}\n\n`)
            else send(`event: cursor\ndata: ${JSON.stringify({ cursor: sealed, done: answer.done })}\n\n`)
          } catch (err) {
            const code = isSessionfoldError(err) ? err.code : 'STORAGE_UNAVAILABLE'
            send(`event: error\ndata: ${JSON.stringify({ error: { code, message: (err as Error).message } })}\n\n`)
            controller.close()
          }
        },
        cancel() {
          stop.abort()
        },
      },
      { highWaterMark: 0 },
    )
    return new Response(body, {
      status: 200,
      headers: cors({ 'content-type': 'text/event-stream', 'cache-control': 'no-store', connection: 'keep-alive', 'sessionfold-sync': SYNC_PROTOCOL }),
    })
  }

  async function push(request: Request): Promise<Response> {
    await allow(request, undefined, 'write') // before the body is read: nobody unknown makes us read megabytes
    const text = await readBody(request, maxBody)
    let batch: unknown
    try {
      batch = JSON.parse(text)
    } catch {
      throw new Refusal(400, 'INVALID_ARGUMENT', 'the push body is not JSON')
    }
    if (!isPlainObject(batch) || !Array.isArray(batch.sessions))
      throw new Refusal(400, 'INVALID_ARGUMENT', 'the push body must be a change batch ({ v: 1, sessions: [...] })')
    const ids = new Set<SessionId>()
    for (const entry of batch.sessions as unknown[]) {
      const id = isPlainObject(entry) && isPlainObject(entry.header) ? entry.header.id : undefined
      if (!isSessionId(id)) throw new Refusal(400, 'INVALID_ARGUMENT', 'every entry of the push must carry a header with a valid session id')
      ids.add(id)
    }
    // A tombstone deletes the session here: a write of it, like an append.
    if (batch.deleted !== undefined) {
      if (!Array.isArray(batch.deleted)) throw new Refusal(400, 'INVALID_ARGUMENT', 'the deleted sessions of a push must be an array of tombstones')
      for (const t of batch.deleted as unknown[]) {
        const id = isPlainObject(t) ? t.id : undefined
        if (!isSessionId(id)) throw new Refusal(400, 'INVALID_ARGUMENT', 'every tombstone of the push must carry a valid session id')
        ids.add(id)
      }
    }
    // Every session first: a push with one session the caller may not write writes nothing.
    for (const id of ids) await allow(request, id, 'write')
    const result = await store.applyChanges(batch as unknown as ChangeBatch)
    if (result.copiedEvents > 0 || result.copiedSessions > 0 || result.deletedSessions > 0) waiters.wake()
    return json(200, result)
  }

  async function sessionsList(request: Request, url: URL): Promise<Response> {
    await allow(request, undefined, 'read')
    const after = url.searchParams.get('after') ?? undefined
    if (after !== undefined && !isSessionId(after)) throw new Refusal(400, 'INVALID_ARGUMENT', 'after must be a session id')
    const headers = await store.listSessions(after === undefined ? { limit: 1000 } : { after, limit: 1000 })
    const cache = new Map<SessionId, boolean>()
    const kept = []
    for (const h of headers) {
      if (!cache.has(h.id))
        cache.set(
          h.id,
          await Promise.resolve()
            .then(() => authorize({ request, sessionId: h.id, access: 'read' }))
            .then(
              (a) => a === true,
              () => false,
            ),
        )
      if (cache.get(h.id)) kept.push(h)
    }
    return json(200, { sessions: kept, next: headers.length === 1000 ? headers.at(-1)!.id : null })
  }

  return async (request: Request): Promise<Response> => {
    try {
      const url = new URL(request.url)
      if (options.allowOrigin !== undefined && request.method === 'OPTIONS') {
        return new Response(null, {
          status: 204,
          headers: cors({
            'access-control-allow-methods': 'GET, POST',
            'access-control-allow-headers': request.headers.get('access-control-request-headers') ?? 'authorization, content-type',
            'access-control-max-age': '600',
          }),
        })
      }
      const path = url.pathname.startsWith(base) ? url.pathname.slice(base.length) : undefined
      const route = (method: string, p: string) => path === p && request.method === method
      // A client of another protocol version would send or read batches this side reads otherwise.
      const version = request.headers.get('sessionfold-sync')
      if (version !== null && version !== SYNC_PROTOCOL) {
        return refuse(
          400,
          'INVALID_ARGUMENT',
          `this server speaks sessionfold sync protocol ${SYNC_PROTOCOL} and the client ${JSON.stringify(version.slice(0, 20))}: update both to the same sessionfold`,
        )
      }
      if (route('POST', SYNC_PATHS.push)) return await push(request)
      if (route('GET', SYNC_PATHS.pull)) return await pull(request, url)
      if (route('GET', SYNC_PATHS.live)) return await live(request, url)
      if (route('GET', SYNC_PATHS.sessions)) return await sessionsList(request, url)
      if (path !== undefined && Object.values(SYNC_PATHS).includes(path as never))
        return refuse(405, 'METHOD_NOT_ALLOWED', `${request.method} is not allowed on ${path}`)
      return refuse(404, 'NOT_FOUND', 'no such sync endpoint')
    } catch (err) {
      if (err instanceof Refusal) return refuse(err.status, err.code, err.message)
      if (isSessionfoldError(err)) {
        const status =
          err.code === 'INVALID_ARGUMENT' || err.code === 'EVENT_TOO_LARGE'
            ? 400
            : err.code === 'STORAGE_QUOTA_EXCEEDED'
              ? 507
              : err.code === 'CANCELLED'
                ? 499
                : 503
        return refuse(status, err.code, err.message)
      }
      return refuse(500, 'INTERNAL', 'the sync handler failed')
    }
  }
}

/** The request's body as text, refused (400) past `max` bytes without reading the rest. */
async function readBody(request: Request, max: number): Promise<string> {
  const all = await readBytes(request, max, (detail) => new Refusal(400, 'INVALID_ARGUMENT', `the push: ${detail}`))
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(all)
  } catch {
    throw new Refusal(400, 'INVALID_ARGUMENT', 'the push body is not UTF-8')
  }
}
