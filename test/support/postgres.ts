// A throwaway PostgreSQL cluster for tests and benchmarks: no mock of the database anywhere.
// Debian's binaries (/usr/lib/postgresql/<version>/bin; scripts/ensure-postgres.sh installs the
// package where it is missing): initdb into a temp folder (as the `postgres` user when we run
// as root, since PostgreSQL refuses to run as root), pg_ctl start on 127.0.0.1 and a free port,
// stopped and removed by stop().
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { chown, mkdtemp, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

export interface PgCluster {
  /** postgres://postgres@127.0.0.1:<port>/postgres */
  readonly url: string
  readonly port: number
  /** The cluster's data folder. */
  readonly dataDir: string
  /** A new empty database in this cluster; its URL. */
  createDatabase(name: string): Promise<string>
  /** Stops the server (mode 'fast': sessions are ended; 'immediate': as a crash would). */
  stopServer(mode?: 'fast' | 'immediate'): Promise<void>
  /** Starts it again on the same port and data. */
  startServer(): Promise<void>
  /** Runs SQL through psql as the superuser; its output (unaligned, tuples only). */
  psql(sql: string, database?: string): Promise<string>
  /** Stops the server and removes its folder. */
  stop(): Promise<void>
}

export interface ClusterOptions {
  /** Server settings (`-c name=value`), e.g. { fsync: 'off' } for a fast unit run. */
  settings?: Record<string, string>
}

/** The folder of Debian's PostgreSQL binaries (the newest version installed), or undefined. */
export function postgresBin(): string | undefined {
  if (process.env.PG_BIN) return process.env.PG_BIN
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a))
  return versions.length > 0 ? join(root, versions[0]!, 'bin') : undefined
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export async function startCluster(options: ClusterOptions = {}): Promise<PgCluster> {
  const bin = postgresBin()
  if (!bin) throw new Error('PostgreSQL is not installed: run scripts/ensure-postgres.sh (apt-get install postgresql)')
  const asRoot = process.getuid?.() === 0
  // Run a PostgreSQL binary, as the postgres user when we are root.
  const pg = async (tool: string, args: string[]) => {
    const file = join(bin, tool)
    return asRoot ? run('runuser', ['-u', 'postgres', '--', file, ...args]) : run(file, args)
  }
  const dir = await mkdtemp(join(tmpdir(), 'sessionfold-pg-'))
  if (asRoot) {
    const { stdout } = await run('id', ['-u', 'postgres'])
    const { stdout: gid } = await run('id', ['-g', 'postgres'])
    await chown(dir, Number(stdout.trim()), Number(gid.trim()))
  }
  const dataDir = join(dir, 'data')
  const port = await freePort()
  await pg('initdb', ['-D', dataDir, '-A', 'trust', '-U', 'postgres', '-E', 'UTF8', '--no-sync', '--locale=C'])
  const settings = Object.entries({
    listen_addresses: '127.0.0.1',
    port: String(port),
    unix_socket_directories: dir,
    max_connections: '200',
    ...options.settings,
  })
  const serverArgs = settings.map(([k, v]) => `-c ${k}=${v}`).join(' ')
  const startServer = async () => {
    await pg('pg_ctl', ['-D', dataDir, '-o', serverArgs, '-l', join(dir, 'server.log'), '-w', '-t', '60', 'start'])
  }
  const stopServer = async (mode: 'fast' | 'immediate' = 'fast') => {
    await pg('pg_ctl', ['-D', dataDir, '-m', mode, '-w', '-t', '60', 'stop'])
  }
  const psql = async (sql: string, database = 'postgres') => {
    const { stdout } = await run(join(bin, 'psql'), [
      '-h',
      '127.0.0.1',
      '-p',
      String(port),
      '-U',
      'postgres',
      '-d',
      database,
      '-tA',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      sql,
    ])
    return stdout.trim()
  }
  await startServer()
  const url = (database: string) => `postgres://postgres@127.0.0.1:${port}/${database}`
  return {
    url: url('postgres'),
    port,
    dataDir,
    async createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`database name ${name} must be [a-z_][a-z0-9_]*`)
      await psql(`CREATE DATABASE ${name}`)
      return url(name)
    },
    stopServer,
    startServer,
    psql,
    async stop() {
      await stopServer('immediate').catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}
