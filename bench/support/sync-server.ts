// The sync servers of bench/http-sync.ts: createSyncHandler over a store, served by node:http on
// 127.0.0.1 (in this process, or in a child process that runs this file with --server, so that
// its CPU is counted apart), and the stores, servers and cluster a run closes at the end.
import { fork, type ChildProcess } from 'node:child_process'
import * as fs from 'node:fs'
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import type { ChangeBatch, ChangeCursor } from '../../src/core/changes'
import { openStore, type EventInput, type Store } from '../../src/index-node'
import { createSyncHandler, toNodeListener } from '../../src/sync/server/index'
import type { PgCluster } from '../../test/support/postgres'

const log = (s: string) => process.stderr.write(`${s}\n`)

export interface Server {
  url: string
  close(): Promise<void>
}

/** createSyncHandler over `store`, served by node:http on 127.0.0.1 and a free port. */
export async function serve(store: Store): Promise<Server> {
  const server = http.createServer(toNodeListener(createSyncHandler({ store, authorize: () => true })))
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      }),
  }
}

type ToServer = { kind: 'cpu' } | { kind: 'close' }
type FromServer = { kind: 'ready'; url: string } | { kind: 'cpu'; us: number } | { kind: 'error'; message: string }

async function serverChild(): Promise<void> {
  const [storage, where, schema] = process.argv.slice(process.argv.indexOf('--server') + 1)
  const send = (m: FromServer) => process.send!(m)
  try {
    const store =
      storage === 'postgres' ? await openStore({ storage: 'postgres', url: where!, schema: schema! }) : await openStore({ storage: 'fs', dir: where! })
    const server = await serve(store)
    process.on('message', async (m: ToServer) => {
      if (m.kind === 'cpu') {
        const u = process.cpuUsage()
        send({ kind: 'cpu', us: u.user + u.system })
      } else if (m.kind === 'close') {
        await server.close()
        await store.close()
        process.exit(0)
      }
    })
    process.on('disconnect', () => process.exit(0))
    send({ kind: 'ready', url: server.url })
  } catch (err) {
    send({ kind: 'error', message: String((err as Error)?.stack ?? err) })
    process.exit(1)
  }
}

export interface ServerProcess {
  url: string
  /** CPU µs of the server process so far (all its threads). */
  cpuUs(): Promise<number>
  close(): Promise<void>
}

export async function startServerProcess(args: string[]): Promise<ServerProcess> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--server', ...args], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = <K extends FromServer['kind']>(kind: K) =>
    new Promise<Extract<FromServer, { kind: K }>>((resolve, reject) => {
      const onMessage = (m: FromServer) => {
        if (m.kind === 'error') reject(new Error(`the server process failed: ${m.message}`))
        if (m.kind !== kind) return
        child.off('message', onMessage)
        child.off('exit', onExit)
        resolve(m as Extract<FromServer, { kind: K }>)
      }
      const onExit = (code: number | null) => reject(new Error(`the server process exited (${code}) while waiting for ${kind}`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
  const ready = await next('ready').catch((err) => {
    if (child.exitCode === null) child.kill()
    throw err
  })
  return {
    url: ready.url,
    async cpuUs() {
      const answer = next('cpu')
      child.send({ kind: 'cpu' } satisfies ToServer)
      return (await answer).us
    },
    async close() {
      if (child.exitCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.send({ kind: 'close' } satisfies ToServer)
      const timer = setTimeout(() => child.kill(), 10_000)
      await exited
      clearTimeout(timer)
    },
  }
}

/** What the parts share: the temp folder, and everything to close at the end. */
export class Resources {
  readonly stores: Store[] = []
  readonly servers: { close(): Promise<void> }[] = []
  cluster: PgCluster | undefined
  #dirs = 0
  constructor(readonly root: string) {}

  newDir(name: string): string {
    const d = join(this.root, `${name}-${this.#dirs++}`)
    fs.mkdirSync(d)
    return d
  }

  async open(dir: string): Promise<Store> {
    const s = await openStore({ storage: 'fs', dir })
    this.stores.push(s)
    return s
  }

  async closeStore(s: Store): Promise<void> {
    const i = this.stores.indexOf(s)
    if (i >= 0) this.stores.splice(i, 1)
    await s.close()
  }

  async closeServer(s: { close(): Promise<void> }): Promise<void> {
    const i = this.servers.indexOf(s)
    if (i >= 0) this.servers.splice(i, 1)
    await s.close()
  }

  async closeAll(): Promise<void> {
    for (const s of this.servers.splice(0).reverse()) await s.close().catch((err) => log(`closing a server: ${err}`))
    for (const s of this.stores.splice(0).reverse()) await s.close().catch((err) => log(`closing a store: ${err}`))
    await this.cluster?.stop().catch((err) => log(`stopping the cluster: ${err}`))
    this.cluster = undefined
  }
}

/** Every event a store holds, counted through changesSince (untimed checks). */
export async function countEvents(store: Store): Promise<{ sessions: number; events: number }> {
  let cursor: ChangeCursor | null = null
  const ids = new Set<string>()
  let events = 0
  for (;;) {
    const c = await store.changesSince(cursor, { maxEvents: 10_000 })
    for (const e of c.batch.sessions) {
      ids.add(e.header.id)
      events += e.events.length
    }
    cursor = c.cursor
    if (c.done) break
  }
  return { sessions: ids.size, events }
}

// ---- main ---------------------------------------------------------------------------------

/**
 * Each push client's batches, made once (untimed) by its own memory store: one session of
 * `batches` × `batch` events, cut by changesSince({ maxEvents: batch }).
 */
export async function pushTemplates(res: Resources, clients: number, batches: number, batch: number, input: EventInput): Promise<ChangeBatch[][]> {
  const templates: ChangeBatch[][] = []
  for (let i = 0; i < clients; i++) {
    const c = await openStore({ storage: 'memory', worker: false })
    res.stores.push(c)
    const s = await c.createSession({ id: `client${i}` })
    for (let j = 0; j < batches; j++) await s.append(Array.from({ length: batch }, () => input))
    await s.close()
    const out: ChangeBatch[] = []
    let cursor: ChangeCursor | null = null
    for (;;) {
      const ch = await c.changesSince(cursor, { maxEvents: batch })
      if (ch.batch.sessions.length > 0) out.push(ch.batch)
      cursor = ch.cursor
      if (ch.done) break
    }
    templates.push(out)
    await res.closeStore(c)
  }
  return templates
}

if (process.argv.includes('--server')) void serverChild()
