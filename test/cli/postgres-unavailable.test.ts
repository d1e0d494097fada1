// Contract: §11 errors and §13 last bullet, on the command line — every command on --url against
// a PostgreSQL server that is down, starting, resetting each connection at its first statement
// or accepting and never answering exits 1 with STORAGE_UNAVAILABLE as one line of JSON (with
// --json), and never with an unhandled rejection: test/support/rejections.ts preloads a monitor
// into the executable's process, and a rejection it saw fails the test.
// The sessionfold executable built fresh from the sources (test/support/cli-bundle.ts), a real
// throwaway cluster, and in front of it the proxy of test/support/pg-proxy.ts.
import { spawn } from 'node:child_process'
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { buildCli, runCli, type CliResult } from '../support/cli-bundle'
import { startPgProxy, type PgProxy, type ProxyMode } from '../support/pg-proxy'
import { startCluster, type PgCluster } from '../support/postgres'

let cluster: PgCluster
let proxy: PgProxy
let cli: Awaited<ReturnType<typeof buildCli>>
const EXPORTED = `${JSON.stringify({ kind: 'end', sessions: 0, events: 0 })}\n` // an export of nothing: import opens the store anyway

beforeAll(async () => {
  cluster = await startCluster({ settings: { fsync: 'off' } })
  const url = await cluster.createDatabase('cli')
  const s = await openStore({ storage: 'postgres', url, schema: 'main', worker: false })
  const a = await s.createSession({ id: 'a' })
  await a.append({ type: 'app/x' })
  await a.close()
  await s.close()
  cli = await buildCli()
}, 180_000)
afterAll(async () => {
  await cli?.remove()
  await cluster?.stop()
})
beforeEach(async () => {
  proxy = await startPgProxy(cluster.port)
})
afterEach(async () => {
  await proxy.close()
})

/** Every command, with what it needs; each on the store in schema main. */
const COMMANDS: [string[], string?][] = [
  [['ls']],
  [['show', 'a']],
  [['tree', 'a']],
  [['events', 'a']],
  [['verify']],
  [['export', 'a']],
  [['delete', 'a']],
  [['import'], EXPORTED],
]

/** stderr is one JSON line `{ error: { code, message } }`; returns it. */
function jsonError(r: CliResult): { code: string; message: string } {
  const lines = r.err.split('\n').filter(Boolean)
  expect(lines, r.err).toHaveLength(1)
  return (JSON.parse(lines[0]!) as { error: { code: string; message: string } }).error
}

/**
 * Every command at once (each a process of its own, as independent as run one after the other:
 * most of each one's time is the driver's retries of the refused connection, spent waiting).
 */
async function refusedAll(url: string, message: RegExp): Promise<void> {
  const results = await Promise.all(COMMANDS.map(([args, stdin]) => runCli(cli.file, [...args, '--url', url, '--schema', 'main', '--json'], { stdin })))
  for (const [i, [args]] of COMMANDS.entries()) {
    const r = results[i]!
    expect(r.code, `${args[0]}: ${r.err}`).toBe(1)
    const error = jsonError(r)
    expect(error.code, args[0]).toBe('STORAGE_UNAVAILABLE')
    expect(error.message, args[0]).toMatch(message)
  }
}

describe('every command on --url', () => {
  it('against a server that is down (nothing listens): STORAGE_UNAVAILABLE, exit 1', async () => {
    const url = proxy.url('cli')
    await proxy.close() // its port refuses connections from now on
    await refusedAll(url, /ECONNREFUSED/)
  }, 120_000)

  const states: [ProxyMode, RegExp][] = [
    ['starting', /the database system is starting up/],
    ['reset-first-statement', /ECONNRESET/],
  ]
  for (const [mode, message] of states) {
    it(`against a server ${mode === 'starting' ? 'that is starting (FATAL 57P03)' : 'that resets each connection at its first statement'}: STORAGE_UNAVAILABLE, exit 1`, async () => {
      proxy.mode = mode
      await refusedAll(proxy.url('cli'), message)
      expect(proxy.stats.connections).toBeGreaterThanOrEqual(COMMANDS.length)
    }, 120_000)
  }

  it('against a server that accepts and never answers: STORAGE_UNAVAILABLE once the connection times out (10 s), exit 1', async () => {
    proxy.mode = 'silent'
    const r = await runCli(cli.file, ['ls', '--url', proxy.url('cli'), '--schema', 'main', '--json'])
    expect(r.code, r.err).toBe(1)
    expect(jsonError(r)).toMatchObject({ code: 'STORAGE_UNAVAILABLE', message: expect.stringMatching(/CONNECT_TIMEOUT/) })
  }, 60_000)
})

describe('events --follow on --url', () => {
  it('exits 1 with STORAGE_UNAVAILABLE when the connection under it is reset, and prints what it had', async () => {
    const follower = spawn(cli.file, ['events', 'a', '--follow', '--url', proxy.url('cli'), '--schema', 'main', '--json'], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let out = ''
    let err = ''
    follower.stdout!.on('data', (c: Buffer) => (out += c.toString()))
    follower.stderr!.on('data', (c: Buffer) => (err += c.toString()))
    const exited = new Promise<number | null>((resolve) => follower.once('exit', resolve))
    for (const deadline = Date.now() + 20_000; !out.includes('\n'); await new Promise((r) => setTimeout(r, 50))) {
      if (Date.now() > deadline) throw new Error(`nothing printed; stderr: ${err}`)
    }
    proxy.mode = 'reset-first-statement'
    proxy.cut()
    expect(await exited).toBe(1)
    expect(JSON.parse(out.trim())).toMatchObject({ seq: 0, type: 'app/x' })
    expect(jsonError({ code: 1, out, err }).code).toBe('STORAGE_UNAVAILABLE')
  }, 60_000)
})
