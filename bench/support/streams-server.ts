// The Durable Streams servers of bench/streams.ts, each in a child process of its own (this file
// run with --server), so that the benchmark's clients do not share a thread with the server they
// measure and each server's CPU is counted apart:
//   sessionfold <dir>                 createStreamsHandler over openStore({ storage: 'fs', dir }) (its defaults)
//   sessionfold-postgres <url> <schema>  the same over openStore({ storage: 'postgres', url, schema })
//   reference <dataDir>               @durable-streams/server's DurableStreamTestServer, file-backed (dataDir)
// All on 127.0.0.1 and a free port; streams at /v1/stream/<id> on each.
import { fork, type ChildProcess } from 'node:child_process'
import * as http from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { DurableStreamTestServer } from '@durable-streams/server'
import { openStore, type Store } from '../../src/index-node'
import { createStreamsHandler, toNodeListener } from '../../src/sync/server/index'

export type StreamsServerKind = 'sessionfold' | 'sessionfold-postgres' | 'reference'

/** Where the streams are on every server of this benchmark. */
export const BASE_PATH = '/v1/stream'

type ToServer = { kind: 'cpu' } | { kind: 'close' }
type FromServer = { kind: 'ready'; url: string } | { kind: 'cpu'; us: number } | { kind: 'closed' } | { kind: 'error'; message: string }

interface Running {
  url: string
  close(): Promise<void>
}

/** createStreamsHandler over `store` on node:http, 127.0.0.1. */
async function serveSessionfold(store: Store, longPollMs: number): Promise<Running> {
  const server = http.createServer(toNodeListener(createStreamsHandler({ store, authorize: () => true, basePath: BASE_PATH, longPollMs })))
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      await new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
      await store.close()
    },
  }
}

async function serverChild(): Promise<void> {
  const args = process.argv.slice(process.argv.indexOf('--server') + 1)
  const [kind, where, schema, longPoll] = args as [StreamsServerKind, string, string, string]
  const longPollMs = Number(longPoll)
  const send = (m: FromServer) => process.send!(m)
  try {
    let running: Running
    if (kind === 'reference') {
      // Its info lines (recovery, every append slower than 50 ms) would drown the benchmark's output; warnings and errors stay.
      console.info = () => {}
      const server = new DurableStreamTestServer({ port: 0, host: '127.0.0.1', dataDir: where, longPollTimeout: longPollMs })
      await server.start()
      running = { url: server.url, close: () => server.stop() }
    } else {
      const store =
        kind === 'sessionfold-postgres' ? await openStore({ storage: 'postgres', url: where, schema }) : await openStore({ storage: 'fs', dir: where })
      running = await serveSessionfold(store, longPollMs)
    }
    let closing = false
    const close = async () => {
      if (closing) return
      closing = true
      await running.close().catch((err) => process.stderr.write(`closing the ${kind} server: ${err}\n`))
    }
    process.on('message', async (m: ToServer) => {
      if (m.kind === 'cpu') {
        const u = process.cpuUsage()
        send({ kind: 'cpu', us: u.user + u.system })
      } else if (m.kind === 'close') {
        await close()
        send({ kind: 'closed' })
        process.exit(0)
      }
    })
    // The benchmark went away without closing this server: close it (its store's locks) and go.
    process.on('disconnect', () => void close().then(() => process.exit(0)))
    send({ kind: 'ready', url: running.url })
  } catch (err) {
    send({ kind: 'error', message: String((err as Error)?.stack ?? err) })
    process.exit(1)
  }
}

export interface StreamsServer {
  kind: StreamsServerKind
  /** http://127.0.0.1:<port> */
  url: string
  /** The URL of stream `id`. */
  stream(id: string): string
  /** CPU µs of the server process so far (all its threads). */
  cpuUs(): Promise<number>
  /** Closes the server (and its store), then waits for its process to exit. */
  close(): Promise<void>
}

/**
 * Starts a server in a child process: `where` is the fs store's folder, the reference server's
 * dataDir, or the PostgreSQL URL (then `schema` too). A long-poll waits `longPollMs` at the tail.
 */
export async function startStreamsServer(kind: StreamsServerKind, where: string, options: { schema?: string; longPollMs: number }): Promise<StreamsServer> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--server', kind, where, options.schema ?? '-', String(options.longPollMs)], {
    execArgv: [
      '--import',
      'tsx',
      ...(process.env.BENCH_STREAMS_PROF && kind === 'sessionfold' ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_STREAMS_PROF}`] : []),
    ],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = <K extends FromServer['kind']>(what: K) =>
    new Promise<Extract<FromServer, { kind: K }>>((resolve, reject) => {
      const onMessage = (m: FromServer) => {
        if (m.kind === 'error') reject(new Error(`the ${kind} server process failed: ${m.message}`))
        if (m.kind !== what) return
        child.off('message', onMessage)
        child.off('exit', onExit)
        resolve(m as Extract<FromServer, { kind: K }>)
      }
      const onExit = (code: number | null) => reject(new Error(`the ${kind} server process exited (${code}) while waiting for ${what}`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
  const ready = await next('ready').catch((err) => {
    if (child.exitCode === null) child.kill()
    throw err
  })
  return {
    kind,
    url: ready.url,
    stream: (id) => `${ready.url}${BASE_PATH}/${id}`,
    async cpuUs() {
      const answer = next('cpu')
      child.send({ kind: 'cpu' } satisfies ToServer)
      return (await answer).us
    },
    async close() {
      if (child.exitCode !== null || child.signalCode !== null) return
      const exited = new Promise((r) => child.once('exit', r))
      child.send({ kind: 'close' } satisfies ToServer)
      // A server that does not close within 20 s is killed: the run must end.
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000)
      await exited
      clearTimeout(timer)
    },
  }
}

if (process.argv.includes('--server')) void serverChild()
