// Contract: §8 command line on a PostgreSQL store — every command takes --url (and --schema) in
// place of --dir; read-only commands write nothing (and create no tables); export/import
// round-trip between PostgreSQL and fs exactly; delete refuses a session whose write lease
// another process holds; the URL's password is never printed.
// The sessionfold executable, built fresh from the sources (test/support/cli-bundle.ts), run as a
// real process against a real throwaway cluster (test/support/postgres.ts), on a store filled
// through openStore({ storage: 'postgres' }): a parent with a subagent tree (and a deleted
// child), a fork of it and an unrelated root.
import { spawn, type ChildProcess } from 'node:child_process'
import { appendFile, mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { buildCli, root, runCli, type CliResult } from '../support/cli-bundle'
import { startCluster, type PgCluster } from '../support/postgres'
import { spawnHolder } from '../support/fixture-process'

let cluster: PgCluster
let url: string
let dir: string
let cli: Awaited<ReturnType<typeof buildCli>>
const holders: ChildProcess[] = []

const run = (args: string[], stdin?: string): Promise<CliResult> => runCli(cli.file, args, { stdin })
const on = (schema: string) => ['--url', url, '--schema', schema]

/**
 * parent ─┬ helper (continuable "helper") ─ grandkid (one-shot "gk")
 *         └ gone (deleted: an unavailable row)
 * forked (a fork of parent at 2), other (a root), victim (a root, deleted by a test).
 */
async function buildStore(schema: string): Promise<void> {
  const s = await openStore({ storage: 'postgres', url, schema, worker: false })
  const parent = await s.createSession({ id: 'parent', cwd: '/proj' })
  await parent.append([
    { type: 'turn/start', time: 1_000 },
    { type: 'app/msg', data: { text: 'hi' } },
    { type: 'turn/end', time: 13_300 },
  ])
  const helper = await parent.spawn({ mode: 'continuable', label: 'helper', id: 'helper', events: [{ type: 'app/task' }] })
  await (await helper.spawn({ mode: 'one-shot', label: 'gk', id: 'grandkid', events: [{ type: 'app/deep' }] })).close()
  await (await parent.spawn({ mode: 'one-shot', id: 'gone' })).close()
  await (await parent.fork({ at: 2, id: 'forked' })).close()
  for (const id of ['other', 'victim']) {
    const root = await s.createSession({ id })
    await root.append({ type: 'app/x', data: id })
    await root.close()
  }
  await helper.close()
  await parent.close()
  await s.deleteSession('gone')
  await s.close()
}

/**
 * Every row of the store's tables (and whether the schema exists), to prove a command wrote
 * nothing; but the checkpoint of `live`, a session a writer holds (it checkpoints when it likes).
 */
async function snapshot(schema: string, live = ''): Promise<string> {
  const exists = await cluster.psql(`SELECT count(*) FROM pg_namespace WHERE nspname = '${schema}'`, 'cli')
  if (exists.trim() === '0') return 'no schema'
  return cluster.psql(
    `SELECT (SELECT string_agg(id || ':' || length || ':' || header::text, ',' ORDER BY id) FROM "${schema}".sessions),
            (SELECT string_agg(session_id || ':' || seq || ':' || md5(body), ',' ORDER BY session_id, seq) FROM "${schema}".events),
            (SELECT string_agg(session_id || ':' || md5(row), ',' ORDER BY session_id) FROM "${schema}".checkpoints WHERE session_id <> '${live}'),
            (SELECT string_agg(session_id || ':' || token, ',' ORDER BY session_id) FROM "${schema}".leases),
            (SELECT count(*) FROM pg_tables WHERE schemaname = '${schema}')`,
    'cli',
  )
}

/** Another process holding `id` open for writing (its write lease), until killed. */
async function holdWriter(schema: string, id: string): Promise<ChildProcess> {
  return spawnHolder(join(__dirname, 'fixtures/pg-writer.ts'), [url, schema, id], holders, root)
}

/** stderr is one JSON line `{ error: { code, message } }`; returns it. */
function jsonError(r: CliResult): { code: string; message: string } {
  const lines = r.err.split('\n').filter(Boolean)
  expect(lines, r.err).toHaveLength(1)
  return (JSON.parse(lines[0]!) as { error: { code: string; message: string } }).error
}

const parsed = (ndjson: string) =>
  ndjson
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as unknown)

const ids = async (schema: string) => (JSON.parse((await run(['ls', ...on(schema), '--json'])).out) as { id: string }[]).map((r) => r.id).sort()

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-cli-pg-'))
  cluster = await startCluster({ settings: { fsync: 'off' } })
  url = await cluster.createDatabase('cli')
  ;[cli] = await Promise.all([buildCli(), buildStore('main')])
}, 180_000)

afterAll(async () => {
  for (const h of holders) h.kill('SIGKILL')
  await cli?.remove()
  await cluster?.stop()
  await rm(dir, { recursive: true, force: true })
})

describe('read-only commands on --url', () => {
  it('ls, show, tree, events, verify and export read the PostgreSQL store and write nothing', async () => {
    const before = await snapshot('main')
    const ls = await run(['ls', ...on('main'), '--json'])
    expect(ls.code, ls.err).toBe(0)
    const rows = JSON.parse(ls.out) as {
      id: string
      events: number
      header: { parentSession?: string; forkedFrom?: string }
      subagent: { label?: string } | null
    }[]
    expect(rows.map((r) => r.id).sort()).toEqual(['forked', 'grandkid', 'helper', 'other', 'parent', 'victim'])
    const byId = Object.fromEntries(rows.map((r) => [r.id, r]))
    expect(byId.helper!.header.parentSession).toBe('parent')
    expect(byId.helper!.subagent?.label).toBe('helper')
    expect(byId.grandkid!.header.parentSession).toBe('helper')
    expect(byId.forked!.header.forkedFrom).toBe('parent')
    expect(byId.forked!.events).toBe(2)
    const text = await run(['ls', ...on('main')])
    expect(text.code, text.err).toBe(0)
    expect(text.out).toMatch(/^ID\s+CREATED\s+ORIGIN/)
    expect(text.out).toContain('6 sessions')

    const show = await run(['show', 'parent', ...on('main'), '--json'])
    expect(show.code, show.err).toBe(0)
    expect((JSON.parse(show.out) as { header: { id: string; cwd: string } }).header).toMatchObject({ id: 'parent', cwd: '/proj' })

    const tree = await run(['tree', 'parent', ...on('main')])
    expect(tree.code, tree.err).toBe(0)
    expect(tree.out).toContain('helper')
    expect(tree.out).toContain('grandkid')
    expect(tree.out).toMatch(/gone.*! unavailable/)

    const events = await run(['events', 'parent', ...on('main')])
    expect(events.code, events.err).toBe(0)
    const lines = events.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; type: string })
    expect(lines.map((e) => e.seq)).toEqual(lines.map((_, i) => i))
    expect(lines.slice(0, 3).map((e) => e.type)).toEqual(['turn/start', 'app/msg', 'turn/end'])
    const range = await run(['events', 'parent', '--from', '1', '--to', '2', ...on('main')])
    expect(
      range.out
        .trim()
        .split('\n')
        .map((l) => (JSON.parse(l) as { type: string }).type),
    ).toEqual(['app/msg'])

    const verify = await run(['verify', ...on('main')])
    expect(verify.code, verify.err + verify.out).toBe(0)

    const exported = await run(['export', 'parent', '--tree', ...on('main')])
    expect(exported.code, exported.err).toBe(0)
    const sessions = exported.out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { kind: string; header?: { id: string } })
      .filter((l) => l.kind === 'session')
      .map((l) => l.header!.id)
    expect(sessions).toEqual(['parent', 'helper', 'grandkid'])

    expect(await snapshot('main')).toBe(before)
  }, 60_000)

  it('a schema without a store is STORAGE_UNAVAILABLE for every read-only command, and no table is created', async () => {
    for (const args of [['ls'], ['show', 'parent'], ['tree', 'parent'], ['events', 'parent'], ['verify'], ['export']]) {
      const r = await run([...args, ...on('nothing'), '--json'])
      expect(r.code, args.join(' ')).toBe(1)
      const error = jsonError(r)
      expect(error.code).toBe('STORAGE_UNAVAILABLE')
      expect(error.message).toContain('no sessionfold store in schema "nothing" at postgres://')
    }
    // delete needs a store too
    const del = await run(['delete', 'parent', ...on('nothing'), '--json'])
    expect(jsonError(del).code).toBe('STORAGE_UNAVAILABLE')
    expect(await snapshot('nothing')).toBe('no schema')
  }, 60_000)

  it('an encrypted store reads with its key from SESSIONFOLD_KEY; without it, KEY_REJECTED', async () => {
    const schema = 'cli_sealed'
    const key = new Uint8Array(32).fill(9)
    const s = await openStore({ storage: 'postgres', url, schema, worker: false, encryption: { key } })
    await (await s.createSession({ id: 'secret', cwd: '/w' })).append({ type: 'app/x', data: 'hidden text' })
    await s.close()
    const before = await snapshot(schema)
    const env = { SESSIONFOLD_KEY: Buffer.from(key).toString('hex') }
    const listed = await runCli(cli.file, ['ls', ...on(schema)], { env })
    expect(listed.code, listed.err).toBe(0)
    expect(listed.out).toContain('secret')
    const events = await runCli(cli.file, ['events', 'secret', ...on(schema), '--json'], { env })
    expect(events.out).toContain('hidden text')
    expect((await runCli(cli.file, ['verify', ...on(schema)], { env })).code).toBe(0)
    const refused = await run(['ls', ...on(schema), '--json'])
    expect(refused.code).toBe(1)
    expect(refused.err).toContain('KEY_REJECTED')
    expect(await snapshot(schema)).toBe(before)
    expect(before).not.toContain('hidden text')
  })

  it('a missing session is SESSION_NOT_FOUND', async () => {
    const r = await run(['show', 'nope', ...on('main'), '--json'])
    expect(r.code).toBe(1)
    expect(jsonError(r).code).toBe('SESSION_NOT_FOUND')
  }, 30_000)
})

describe('events --follow on --url', () => {
  it('prints the appends another writer makes, in order, until SIGINT (exit 0)', async () => {
    const s = await openStore({ storage: 'postgres', url, schema: 'follow', worker: false })
    const live = await s.createSession({ id: 'live' })
    await live.append([
      { type: 'app/e', data: 0 },
      { type: 'app/e', data: 1 },
    ])
    const follower = spawn(cli.file, ['events', 'live', '--follow', ...on('follow')], { stdio: ['ignore', 'pipe', 'pipe'] })
    holders.push(follower)
    let out = ''
    let err = ''
    follower.stdout!.on('data', (c: Buffer) => (out += c.toString()))
    follower.stderr!.on('data', (c: Buffer) => (err += c.toString()))
    const count = () => out.split('\n').filter(Boolean).length
    const until = async (ok: () => boolean) => {
      for (const deadline = Date.now() + 20_000; !ok(); await new Promise((r) => setTimeout(r, 50))) {
        if (Date.now() > deadline) throw new Error(`follower printed ${count()} lines; stderr: ${err}`)
      }
    }
    await until(() => count() === 2)
    for (let i = 2; i < 12; i++) await live.append({ type: 'app/e', data: i })
    await until(() => count() === 12)
    follower.kill('SIGINT')
    expect(await new Promise((r) => follower.once('exit', r))).toBe(0)
    const seen = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { seq: number; data: number })
    expect(seen.map((e) => [e.seq, e.data])).toEqual(seen.map((_, i) => [i, i]))
    await live.close()
    await s.close()
  }, 60_000)
})

describe('usage', () => {
  it('--dir with --url, --schema without --url, a URL that is not postgres:// and a bad schema are usage errors', async () => {
    const cases: [string[], RegExp][] = [
      [['ls', '--dir', dir, '--url', url], /--dir and --url/],
      [['ls', '--schema', 'main'], /--schema needs --url/],
      [['ls', '--url', 'mysql://u:sekret@h/db'], /--url must be a PostgreSQL URL/],
      [['ls', '--url', url, '--schema', 'Bad-Name'], /--schema must match/],
    ]
    for (const [args, message] of cases) {
      const r = await run([...args, '--json'])
      expect(r.code, args.join(' ')).toBe(2)
      const error = jsonError(r)
      expect(error.code).toBe('USAGE')
      expect(error.message).toMatch(message)
      expect(r.err).not.toContain('sekret')
    }
    const help = await run(['help', 'ls'])
    expect(help.out).toContain('--url <url>')
    expect(help.out).toContain('--schema <name>')
  }, 30_000)
})

describe('export and import between PostgreSQL and fs', () => {
  it('round-trips exactly: postgres → fs → another postgres schema, same sessions and events, children available', async () => {
    const fromPg = await run(['export', ...on('main')])
    expect(fromPg.code, fromPg.err).toBe(0)
    const fsStore = join(dir, 'copy')
    const intoFs = await run(['import', '--dir', fsStore, '--json'], fromPg.out)
    expect(intoFs.code, intoFs.err).toBe(0)
    const fromFs = await run(['export', '--dir', fsStore])
    expect(fromFs.code, fromFs.err).toBe(0)
    // The same values line for line (an imported header's keys are in the canonical order the
    // import checks them in, which may differ from the order the writer used).
    expect(parsed(fromFs.out)).toEqual(parsed(fromPg.out))

    const intoPg = await run(['import', ...on('copy'), '--json'], fromFs.out)
    expect(intoPg.code, intoPg.err).toBe(0)
    const again = await run(['export', ...on('copy')])
    expect(parsed(again.out)).toEqual(parsed(fromPg.out))
    expect(again.out).toBe(fromFs.out) // both imported: byte for byte
    const tree = await run(['tree', 'parent', ...on('copy')])
    expect(tree.code, tree.err).toBe(0)
    expect(tree.out).toMatch(/helper/)
    expect(tree.out).toMatch(/grandkid/)
    expect(tree.out.split('\n').filter((l) => l.includes('! unavailable'))).toHaveLength(1) // only the deleted "gone"

    // The same export again changes nothing.
    const before = await snapshot('copy')
    const twice = await run(['import', ...on('copy'), '--json'], fromPg.out)
    expect(twice.code, twice.err).toBe(0)
    expect(await snapshot('copy')).toBe(before)
  }, 90_000)

  it('bad input to import on --url is INVALID_ARGUMENT and creates no schema', async () => {
    const r = await run(['import', ...on('never'), '--json'], '{"kind":"session"}\n')
    expect(r.code).toBe(1)
    expect(jsonError(r).code).toBe('INVALID_ARGUMENT')
    expect(await snapshot('never')).toBe('no schema')
  }, 30_000)
})

describe('delete on --url', () => {
  it('refuses a session another process holds open for writing, and deletes one nobody holds', async () => {
    await buildStore('del')
    const writer = await holdWriter('del', 'other')
    const before = await snapshot('del', 'other')
    const refused = await run(['delete', 'victim', 'other', ...on('del'), '--json'])
    expect(refused.code).toBe(1)
    const error = jsonError(refused)
    expect(error.code).toBe('SESSION_LOCKED')
    expect(error.message).toContain('"other"')
    // Nothing deleted (victim neither: all or none), and the lease taken on victim given back.
    expect(await snapshot('del', 'other')).toBe(before)

    const missing = await run(['delete', 'nope', ...on('del'), '--json'])
    expect(jsonError(missing).code).toBe('SESSION_NOT_FOUND')

    const done = await run(['delete', 'victim', ...on('del'), '--json'])
    expect(done.code, done.err).toBe(0)
    expect(JSON.parse(done.out)).toEqual({ deleted: ['victim'] })
    expect(await ids('del')).toEqual(['forked', 'grandkid', 'helper', 'other', 'parent'])

    const tree = await run(['delete', 'parent', '--tree', ...on('del'), '--json'])
    expect(tree.code, tree.err).toBe(0)
    expect((JSON.parse(tree.out) as { deleted: string[] }).deleted.sort()).toEqual(['grandkid', 'helper', 'parent'])
    expect(await ids('del')).toEqual(['forked', 'other'])
    writer.kill('SIGKILL')
  }, 90_000)
})

describe('the password of --url', () => {
  it('is never printed: a refused password is STORAGE_UNAVAILABLE, and messages name the URL without it', async () => {
    await cluster.psql(`CREATE ROLE u LOGIN PASSWORD 'sekret'`, 'cli')
    await cluster.psql(`GRANT USAGE ON SCHEMA main TO u; GRANT SELECT ON ALL TABLES IN SCHEMA main TO u`, 'cli')
    // The cluster trusts everyone; u must give its password (scram) from here on.
    const hba = join(cluster.dataDir, 'pg_hba.conf')
    const rules = await readFile(hba, 'utf8')
    await rm(hba)
    await appendFile(hba, `host all u 127.0.0.1/32 scram-sha-256\n${rules}`)
    await cluster.psql(`SELECT pg_reload_conf()`)
    if ((await cluster.psql(`SELECT count(*) FROM pg_hba_file_rules WHERE 'u' = ANY(user_name) AND auth_method = 'scram-sha-256'`)).trim() !== '1') {
      throw new Error('pg_hba.conf was not reloaded')
    }
    const base = new URL(url)
    const as = (password: string) => {
      const u = new URL(url)
      u.username = 'u'
      u.password = password
      return u.toString()
    }

    const ok = await run(['ls', '--url', as('sekret'), '--schema', 'main', '--json'])
    expect(ok.code, ok.err).toBe(0)
    expect((JSON.parse(ok.out) as unknown[]).length).toBe(6)

    for (const json of [true, false]) {
      // A wrong password that holds the right one: printed, it would show 'sekret'.
      const wrong = await run(['ls', '--url', as('sekret-wrong'), '--schema', 'main', ...(json ? ['--json'] : [])])
      expect(wrong.code).toBe(1)
      expect(wrong.err).toContain('STORAGE_UNAVAILABLE')
      expect(wrong.err).toMatch(/password authentication failed/)
      expect(wrong.err + wrong.out).not.toContain('sekret')

      // The right password, no store in that schema: the message names the URL, not the password.
      const none = await run(['tree', 'parent', '--url', as('sekret'), '--schema', 'empty', ...(json ? ['--json'] : [])])
      expect(none.code).toBe(1)
      expect(none.err).toContain(`at postgres://u@${base.host}${base.pathname}`)
      expect(none.err + none.out).not.toContain('sekret')

      // Writing with a role that may only read: the server's refusal, masked too.
      const refused = await run(['delete', 'other', '--url', as('sekret'), '--schema', 'main', ...(json ? ['--json'] : [])])
      expect(refused.code).toBe(1)
      expect(refused.err).toMatch(/STORAGE_UNAVAILABLE/)
      expect(refused.err + refused.out).not.toContain('sekret')
    }
    expect(await ids('main')).toContain('other')
  }, 90_000)
})
