// The chaos run's sync server: test/fixtures/sync-server-process.ts in a process of its own, so
// that it can be killed (SIGKILL, as a crash) and started again on the same store: an fs folder,
// or a database of a throwaway PostgreSQL cluster (test/support/postgres.ts).
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { openStore, type Store } from '../../../src/index-node'
import { startCluster, type PgCluster } from '../postgres'

export type ServerKind = 'fs' | 'postgres'

export interface ChaosServer {
  readonly kind: ServerKind
  /** Starts it (again) on the same store; resolves with its port. */
  start(): Promise<number>
  /** Kills it with SIGKILL, as a crash would, and waits until it is gone. */
  kill(): Promise<void>
  /** The last of what it wrote to stderr, for a report. */
  stderr(): string
  /** The server's store, opened in this thread (once the server is killed). */
  open(): Promise<Store>
  /** Kills it and removes its cluster, if any. */
  stop(): Promise<void>
}

const FIXTURE = fileURLToPath(new URL('../../fixtures/sync-server-process.ts', import.meta.url))
const SCHEMA = 'chaos'

export async function startChaosServer(kind: ServerKind, temp: string): Promise<ChaosServer> {
  let cluster: PgCluster | undefined
  let where = join(temp, 'server')
  if (kind === 'postgres') {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    where = await cluster.createDatabase('chaos')
  }
  let child: ChildProcess | undefined
  let exited: Promise<void> = Promise.resolve()
  let tail = ''

  async function start(): Promise<number> {
    const p = spawn(process.execPath, ['--import', 'tsx', FIXTURE, where, '0', SCHEMA], { stdio: ['ignore', 'pipe', 'pipe'] })
    child = p
    exited = new Promise((resolve) => p.once('exit', () => resolve()))
    p.stderr!.on('data', (d: Buffer) => {
      tail = (tail + d.toString()).slice(-4000)
    })
    return new Promise<number>((resolve, reject) => {
      let out = ''
      const onData = (d: Buffer) => {
        out += d.toString()
        const m = /^port (\d+)$/m.exec(out)
        if (!m) return
        // Later lines (`push <bytes>`) are read and dropped, so the pipe never fills.
        p.stdout!.off('data', onData)
        p.stdout!.resume()
        resolve(Number(m[1]))
      }
      p.stdout!.on('data', onData)
      p.once('exit', (code, signal) => reject(new Error(`the sync server exited (${code ?? signal}) before listening: ${tail}`)))
    })
  }

  async function kill(): Promise<void> {
    child?.kill('SIGKILL')
    await exited
    child = undefined
  }

  return {
    kind,
    start,
    kill,
    stderr: () => tail,
    open: () =>
      kind === 'postgres'
        ? openStore({ storage: 'postgres', url: where, schema: SCHEMA, worker: false })
        : openStore({ storage: 'fs', dir: where, worker: false }),
    async stop() {
      await kill()
      await cluster?.stop()
    },
  }
}
