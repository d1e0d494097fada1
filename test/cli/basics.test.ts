// Contract: §8 command line — --version, help, export of a store or a tree, import checked before it writes, delete, ls/show for people, --json errors
// The sessionfold executable, built fresh from the sources (test/support/cli-bundle.ts) and
// run as a real process on stores built here in temp folders: a tree of subagents three
// levels deep with a deleted child and an external one, a fork, an unrelated root, a damaged
// session, and (for delete) a writer in another process. Each bad input is checked for both
// halves: its error code, and that the store (or its absence) did not change.
import type { ChildProcess } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { folderOf } from '../../src/backends/fs/layout'
import { buildCli, root, runCli, type CliResult } from '../support/cli-bundle'
import { spawnHolder } from '../support/fixture-process'

let dir: string
let store: string
let cli: Awaited<ReturnType<typeof buildCli>>
const holders: ChildProcess[] = []

const run = (args: string[], stdin?: string): Promise<CliResult> => runCli(cli.file, args, { stdin })

/** Runs several commands, four processes at a time (each one mostly waits on starting Node). */
async function runAll(runs: { args: string[]; stdin?: string }[]): Promise<CliResult[]> {
  const results: CliResult[] = []
  let next = 0
  const worker = async () => {
    for (let i = next++; i < runs.length; i = next++) results[i] = await run(runs[i]!.args, runs[i]!.stdin)
  }
  await Promise.all([worker(), worker(), worker(), worker()])
  return results
}

/** Every file under `path` with its size and mtime ({} when there is no such folder). */
async function files(path: string): Promise<Record<string, string>> {
  if (!existsSync(path)) return {}
  const out: Record<string, string> = {}
  for (const name of await readdir(path, { recursive: true })) {
    const st = await stat(join(path, name)).catch(() => undefined)
    if (st?.isFile()) out[name] = `${st.size}@${st.mtimeMs}`
  }
  return out
}

/**
 * parent ─┬ helper (continuable "helper") ─ grandkid (one-shot "gk") ─ ggkid (one-shot)
 *         ├ gone (deleted: an unavailable row)
 *         └ remote (external "elsewhere")
 * forked (a fork of parent), other (a root), and with `damaged`, broken (a flipped byte).
 */
async function buildStore(path: string, options: { damaged?: boolean } = {}): Promise<void> {
  const s = await openStore({ dir: path, worker: false })
  const parent = await s.createSession({ id: 'parent', cwd: '/proj' })
  await parent.append([
    { type: 'turn/start', time: 1_000 },
    { type: 'app/msg', data: { text: 'hi' } },
    { type: 'turn/end', time: 13_300 },
  ])
  const helper = await parent.spawn({ mode: 'continuable', label: 'helper', id: 'helper', events: [{ type: 'app/task' }] })
  const grandkid = await helper.spawn({ mode: 'one-shot', label: 'gk', id: 'grandkid' })
  await (await grandkid.spawn({ mode: 'one-shot', id: 'ggkid', events: [{ type: 'app/deep' }] })).close()
  await (await parent.spawn({ mode: 'one-shot', id: 'gone' })).close()
  await parent.recordExternal({ childId: 'remote', label: 'elsewhere' })
  await (await parent.fork({ at: 2, id: 'forked' })).close()
  const other = await s.createSession({ id: 'other' })
  await other.append({ type: 'app/x' })
  await other.close()
  for (const h of [grandkid, helper, parent]) await h.close()
  await s.deleteSession('gone')
  if (options.damaged) {
    const broken = await s.createSession({ id: 'broken' })
    for (let i = 0; i < 3; i++) await broken.append({ type: 'app/e', data: 'x'.repeat(50) })
    await broken.close()
  }
  await s.close()
  if (options.damaged) {
    // A flipped byte inside the first record, whole records after it: CORRUPT_LOG.
    const log = join(path, 'sessions', folderOf('broken'), 'events.log')
    const bytes = await readFile(log)
    bytes[20] = bytes[20]! ^ 0xff
    await writeFile(log, bytes)
  }
}

/** Another process holding `id` open for writing (the store's writer lock), until killed. */
async function holdWriter(path: string, id: string): Promise<ChildProcess> {
  return spawnHolder(join(root, 'test/fixtures/lock-holder.ts'), [path, id], holders, root)
}

const ids = async (path: string) => (JSON.parse((await run(['ls', '--dir', path, '--json'])).out) as { id: string }[]).map((r) => r.id).sort()

/** The session lines of an export, in order. */
const sessionLines = (ndjson: string) =>
  ndjson
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { kind: string; header?: { id: string } })
    .filter((l) => l.kind === 'session')
    .map((l) => l.header!.id)

/** stderr is exactly one line, one JSON object `{ error: { code, message } }`; returns it. */
function jsonError(r: CliResult): { code: string; message: string } {
  const lines = r.err.split('\n').filter(Boolean)
  expect(lines, r.err).toHaveLength(1)
  const parsed = JSON.parse(lines[0]!) as { error: { code: string; message: string } }
  expect(Object.keys(parsed)).toEqual(['error'])
  expect(Object.keys(parsed.error).sort()).toEqual(['code', 'message'])
  expect(parsed.error.message.length).toBeGreaterThan(0)
  return parsed.error
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-cli-basics-'))
  store = join(dir, 'store')
  ;[cli] = await Promise.all([buildCli(), buildStore(store, { damaged: true })])
}, 120_000)

afterAll(async () => {
  for (const h of holders) h.kill('SIGKILL')
  await cli?.remove()
  await rm(dir, { recursive: true, force: true })
})

describe('sessionfold --version and help', () => {
  it('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(await run(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' })
  })

  it('help lists every command; help <command>, <command> --help give its usage with every option', async () => {
    const general = await run(['help'])
    expect(general.code).toBe(0)
    expect((await run(['--help'])).out).toBe(general.out)
    expect(general.out).toMatch(/^Usage: sessionfold <command> \[options\]/)
    expect(general.out).toContain('Exit status: 0 done, 1 damage found or the operation failed, 2 usage error.')
    // Each command with the options it must document (besides --dir, --json and --help).
    const expected: Record<string, string[]> = {
      ls: [],
      show: [],
      tree: [],
      events: ['--from', '--to', '--follow'],
      verify: [],
      export: ['--tree'],
      import: [],
      delete: ['--tree'],
      help: [],
    }
    const guide = await readFile(join(root, 'docs/guide/cli.md'), 'utf8')
    const commands = Object.keys(expected)
    const helps = await runAll(commands.map((c) => ({ args: ['help', c] })))
    const flags = await runAll(commands.map((c) => ({ args: [c, '--help'] })))
    for (const [i, [command, options]] of Object.entries(expected).entries()) {
      expect(general.out, command).toMatch(new RegExp(`^ {2}${command}\\b`, 'm'))
      const one = helps[i]!
      expect(one.code, command).toBe(0)
      expect(one.out).toMatch(new RegExp(`^Usage: sessionfold ${command}\\b`))
      for (const option of command === 'help' ? [] : [...options, '--dir', '--json', '--help'])
        expect(one.out, `${command} ${option}`).toMatch(new RegExp(`^ {2}(-h, )?${option}\\b`, 'm'))
      expect(one.out).toMatch(new RegExp(`^ {2}\\$ sessionfold ${command}\\b`, 'm')) // an example
      if (command !== 'help') expect(flags[i]!.out, command).toBe(one.out)
      // The guide's list of commands shows the same example.
      expect(guide, command).toContain(`\n${/^ {2}\$ (.+)$/m.exec(one.out)![1]!}  `)
    }
  })

  it('an unknown command is a usage error: exit 2 and a stable message (one JSON object with --json)', async () => {
    const r = await run(['bogus'])
    expect(r.code).toBe(2)
    expect(r.out).toBe('')
    expect(r.err).toMatch(/^sessionfold: unknown command "bogus"\n\nUsage: sessionfold <command>/)
    const j = await run(['bogus', '--json'])
    expect(j.code).toBe(2)
    expect(jsonError(j)).toEqual({ code: 'USAGE', message: 'unknown command "bogus"' })
    expect((await run(['help', 'bogus'])).code).toBe(2)
    // A usage error of a command prints that command's usage.
    const show = await run(['show'])
    expect(show.code).toBe(2)
    expect(show.err).toMatch(/^sessionfold: show needs exactly one session id\n\nUsage: sessionfold show <id>/)
  })
})

describe('ls and show, for people', () => {
  it('ls shows origin, parent and label; --json carries the identity', async () => {
    const r = await run(['ls', '--dir', store])
    expect(r.code).toBe(1) // "broken" is damaged
    const lines = r.out.split('\n')
    expect(lines[0]).toMatch(/^ID\s+CREATED\s+ORIGIN\s+EVENTS\s+TITLE\s+PARENT\s+LABEL\s+CWD$/)
    const row = (id: string) => lines.find((l) => l.startsWith(`${id} `))!.split(/\s{2,}/)
    expect(row('helper').slice(2)).toEqual(['subagent', '3', 'parent', '"helper"', '/proj'])
    expect(row('grandkid').slice(2)).toEqual(['subagent', '2', 'helper', '"gk"', '/proj'])
    expect(row('ggkid').slice(2)).toEqual(['subagent', '2', 'grandkid', '/proj'])
    expect(row('forked').slice(2)).toEqual(['fork', '2', 'parent', '/proj'])
    expect(row('parent').slice(2)).toEqual(['root', '6', '/proj'])
    expect(row('broken').slice(1, 3)).toEqual(['-', 'DAMAGED'])
    const json = JSON.parse((await run(['ls', '--dir', store, '--json'])).out) as {
      id: string
      subagent?: unknown
      header?: { origin: string; parentSession?: string }
    }[]
    expect(json.find((j) => j.id === 'grandkid')).toMatchObject({
      subagent: { mode: 'one-shot', label: 'gk', seq: 0 },
      header: { origin: 'subagent', parentSession: 'helper' },
    })
    expect(json.find((j) => j.id === 'parent')).toMatchObject({ subagent: null })
  })

  it('ls takes the query of store.sessions(): --roots, --tag, --search, --order, --limit; a bad one is a usage error', async () => {
    const listed = join(dir, 'listed')
    const s = await openStore({ storage: 'fs', dir: listed, worker: false })
    const a = await s.createSession({ id: 'a', title: 'Invoice run', tags: ['work'] })
    await new Promise((r) => setTimeout(r, 5))
    const b = await s.createSession({ id: 'b', title: 'Holiday', tags: ['home'] })
    await new Promise((r) => setTimeout(r, 5))
    await a.spawn({ mode: 'one-shot', id: 'a-kid', title: 'invoice helper', tags: ['work'] })
    await new Promise((r) => setTimeout(r, 5))
    await b.append({ type: 'app/x' })
    await s.close()
    const ids = async (...args: string[]) => {
      const r = await run(['ls', '--dir', listed, '--json', ...args])
      expect(r.code, r.err).toBe(0)
      return (JSON.parse(r.out) as { id: string }[]).map((j) => j.id)
    }
    expect(await ids()).toEqual(['a-kid', 'b', 'a'])
    expect(await ids('--roots')).toEqual(['b', 'a'])
    expect(await ids('--order', 'activity')).toEqual(['b', 'a', 'a-kid']) // a's last event records its spawn
    expect(await ids('--tag', 'work')).toEqual(['a-kid', 'a'])
    expect(await ids('--search', 'INVOICE', '--roots')).toEqual(['a'])
    expect(await ids('--limit', '1')).toEqual(['a-kid'])
    const text = await run(['ls', '--dir', listed, '--roots'])
    expect(text.out.split('\n').find((l) => l.startsWith('a '))).toContain('"Invoice run"')
    for (const bad of [
      ['--limit', '0'],
      ['--order', 'name'],
      ['--tag', 'x'.repeat(65)],
    ]) {
      const r = await run(['ls', '--dir', listed, ...bad])
      expect(r.code, bad.join(' ')).toBe(2)
      expect(r.err).toContain(bad[0])
    }
  })

  it('show renders the catalog as rows and timing and identity in words; --json keeps the values as they are', async () => {
    const r = await run(['show', 'parent', '--dir', store])
    expect(r.code).toBe(0)
    expect(r.out).toContain('identity  none (not a subagent, or no descriptor of its own)')
    expect(r.out).toContain('timing    1 turn, 12.3 s in settled turns; no turn running')
    expect(r.out).toMatch(
      /children {2}3\n {2}ID +MODE +LABEL +CREATED\n {2}helper +continuable +"helper" +\d{4}-\d\d-\d\dT[\d:.]+Z\n {2}gone +one-shot + \d{4}-.+Z\n {2}remote +external +"elsewhere" +\d{4}-.+Z\n/,
    )
    expect(r.out).not.toMatch(/[[{]"/) // no raw JSON for people
    const helper = await run(['show', 'helper', '--dir', store])
    expect(helper.out).toContain('identity  continuable "helper" (descriptor at seq 0)')
    expect(helper.out).toContain('timing    0 turns, 0 ms in settled turns; no turn running')
    const json = JSON.parse((await run(['show', 'parent', '--dir', store, '--json'])).out)
    expect(json.values.subagentTiming).toEqual({ turns: 1, settledMs: 12_300, runningSince: null })
    expect(json.values.subagentCatalog.map((c: { id: string }) => c.id)).toEqual(['helper', 'gone', 'remote'])
    expect(json.values.subagent).toBeNull()
  })
})

describe('--json errors', () => {
  it('every command reports an error as one JSON object on stderr, with a non-zero exit', async () => {
    const nowhere = join(dir, 'nowhere')
    const cases: [string[], string, string?][] = [
      [['ls', '--dir', nowhere], 'STORAGE_UNAVAILABLE'],
      [['verify', '--dir', nowhere], 'STORAGE_UNAVAILABLE'],
      [['show', 'nobody', '--dir', store], 'SESSION_NOT_FOUND'],
      [['tree', 'nobody', '--dir', store], 'SESSION_NOT_FOUND'],
      [['events', 'nobody', '--dir', store], 'SESSION_NOT_FOUND'],
      [['export', 'parent', 'nobody', '--dir', store], 'SESSION_NOT_FOUND'],
      [['delete', 'nobody', '--dir', store], 'SESSION_NOT_FOUND'],
      [['show', 'broken', '--dir', store], 'CORRUPT_LOG'],
      [['import', '--dir', join(dir, 'json-import')], 'INVALID_ARGUMENT', 'not an export\n'],
      [['events', 'parent', '--from', 'x', '--dir', store], 'USAGE'],
    ]
    const results = await runAll(cases.map(([args, , stdin]) => ({ args: [...args, '--json'], stdin })))
    for (const [i, [args, code]] of cases.entries()) {
      const r = results[i]!
      expect(r.code, args.join(' ')).toBe(code === 'USAGE' ? 2 : 1)
      expect(r.out, args.join(' ')).toBe('')
      expect(jsonError(r).code, args.join(' ')).toBe(code)
    }
    // Without --json: the same error for people.
    expect((await run(['show', 'nobody', '--dir', store])).err).toBe('sessionfold: session "nobody" does not exist (SESSION_NOT_FOUND)\n')
  })
})

describe('export and import', () => {
  it('export --tree takes every descendant, parents first; imported, the children are available', async () => {
    const tree = await run(['export', 'parent', '--tree', '--dir', store])
    expect(tree.code).toBe(0)
    expect(tree.err).toBe('') // "gone" was deleted: nothing to take, nothing to report
    expect(sessionLines(tree.out)).toEqual(['parent', 'helper', 'grandkid', 'ggkid'])
    expect(JSON.parse(tree.out.trim().split('\n').at(-1)!)).toEqual({ kind: 'end', sessions: 4, events: 6 + 3 + 2 + 2 })
    // Named children first: they still come after their parents (ggkid's parent is not taken).
    expect(sessionLines((await run(['export', 'ggkid', 'grandkid', 'helper', 'parent', '--dir', store])).out)).toEqual([
      'parent',
      'helper',
      'grandkid',
      'ggkid',
    ])
    expect(sessionLines((await run(['export', 'ggkid', 'helper', '--dir', store])).out)).toEqual(['ggkid', 'helper'])

    const copy = join(dir, 'tree-copy')
    const imported = await run(['import', '--dir', copy, '--json'], tree.out)
    expect(imported.code).toBe(0)
    expect(JSON.parse(imported.out)).toMatchObject({ copiedSessions: 4, copiedEvents: 13, conflicts: [], skipped: [] })
    const copied = await run(['tree', 'parent', '--dir', copy])
    expect(copied.out).toBe((await run(['tree', 'parent', '--dir', store])).out)
    expect(copied.out).toBe(
      [
        'parent  root',
        '├─ helper  continuable  "helper"  inactive',
        '│  └─ grandkid  one-shot  "gk"  inactive',
        '│     └─ ggkid  one-shot  inactive',
        '├─ gone  ! unavailable',
        '└─ remote  external  "elsewhere"',
        '',
      ].join('\n'),
    )
    expect(await ids(copy)).toEqual(['ggkid', 'grandkid', 'helper', 'parent'])

    // Without --tree, only the parent travels: its children are unavailable in the copy.
    const alone = join(dir, 'alone-copy')
    expect((await run(['import', '--dir', alone], (await run(['export', 'parent', '--dir', store])).out)).code).toBe(0)
    expect((await run(['tree', 'parent', '--dir', alone])).out).toContain('├─ helper  ! unavailable')
  })

  it('export with no id takes the whole store; a damaged session is left out, reported, and the exit status is 1', async () => {
    const all = await run(['export', '--dir', store])
    expect(all.code).toBe(1)
    expect(all.err).toMatch(/^sessionfold: warning: session "broken" is damaged and was not exported: .+ \(CORRUPT_LOG\)\n$/)
    const order = sessionLines(all.out)
    expect([...order].sort()).toEqual(['forked', 'ggkid', 'grandkid', 'helper', 'other', 'parent'])
    for (const [parent, child] of [
      ['parent', 'helper'],
      ['helper', 'grandkid'],
      ['grandkid', 'ggkid'],
      ['parent', 'forked'],
    ]) {
      expect(order.indexOf(parent!), `${parent} before ${child}`).toBeLessThan(order.indexOf(child!))
    }
    const json = await run(['export', '--dir', store, '--json'])
    expect(JSON.parse(json.err)).toEqual({ warning: { code: 'CORRUPT_LOG', message: expect.stringContaining('session "broken" is damaged') } })

    const copy = join(dir, 'all-copy')
    expect((await run(['import', '--dir', copy], all.out)).out).toBe('imported 6 new sessions, 16 events\n')
    expect(await ids(copy)).toEqual(['forked', 'ggkid', 'grandkid', 'helper', 'other', 'parent'])
    for (const id of ['parent', 'forked', 'ggkid']) expect((await run(['events', id, '--dir', copy])).out).toBe((await run(['events', id, '--dir', store])).out)
    // The export of a copy is the export it was made from.
    expect((await run(['export', '--dir', copy])).out).toBe(all.out)

    // An empty store exports an end line only; importing that creates nothing.
    const empty = join(dir, 'empty')
    await (await openStore({ dir: empty, worker: false })).close()
    const none = await run(['export', '--dir', empty])
    expect(none).toEqual({ code: 0, out: '{"kind":"end","sessions":0,"events":0}\n', err: '' })
    expect(await run(['import', '--dir', join(dir, 'from-empty')], none.out)).toMatchObject({ code: 0, out: 'imported 0 new sessions, 0 events\n' })
    expect(existsSync(join(dir, 'from-empty'))).toBe(false)
  })

  it('import checks all of its input first: garbage, a cut-off file or a bad line writes nothing, anywhere', async () => {
    const good = (await run(['export', 'parent', '--tree', '--dir', store])).out
    const lines = good.trim().split('\n')
    const middle = Math.floor(lines.length / 2)
    const inputs: Record<string, string> = {
      garbage: 'hello, this is not an export\n',
      'binary garbage': '\u0000\u0001\u00ff{[\n',
      'JSON that is not an export': '{"kind":"nope"}\n[1,2,3]\n',
      'empty input': '',
      'cut inside a line': good.slice(0, Math.floor(good.length * 0.6)),
      'cut at a line boundary, inside a session': `${lines.slice(0, -2).join('\n')}\n`,
      'cut at a line boundary, between sessions': `${lines.slice(0, -1).join('\n')}\n`,
      'a bad line in the middle': [
        ...lines.slice(0, middle),
        '{"kind":"event","session":"helper","event":{"seq":1,"type":"","time":0,"data":null}}',
        ...lines.slice(middle + 1),
      ].join('\n'),
      'a line of non-JSON in the middle': [...lines.slice(0, middle), 'oops', ...lines.slice(middle + 1)].join('\n'),
      'an end line that miscounts': [...lines.slice(0, -1), '{"kind":"end","sessions":4,"events":12}'].join('\n'),
      'a line after the end': `${good}{"kind":"end","sessions":0,"events":0}\n`,
      'a session twice': [...lines.slice(0, -1), ...lines.slice(0, 7), '{"kind":"end","sessions":5,"events":19}'].join('\n'),
    }
    // Into a folder that does not exist: not created.
    const fresh = join(dir, 'never')
    // Into a store that exists: not a file changed (not even a lock or a temp folder).
    const existing = join(dir, 'existing')
    await buildStore(existing)
    const before = await files(existing)
    const cases = Object.entries(inputs)
    const results = await runAll(
      cases.flatMap(([, input]) => [
        { args: ['import', '--dir', fresh, '--json'], stdin: input },
        { args: ['import', '--dir', existing], stdin: input },
      ]),
    )
    for (const [i, [what]] of cases.entries()) {
      const [r, r2] = [results[2 * i]!, results[2 * i + 1]!]
      expect(r.code, what).toBe(1)
      expect(jsonError(r).code, what).toBe('INVALID_ARGUMENT')
      expect(r2.code, what).toBe(1)
      expect(r2.err, what).toMatch(/^sessionfold: .+ \(INVALID_ARGUMENT\)\n$/)
    }
    expect(existsSync(fresh)).toBe(false)
    expect(await files(existing)).toEqual(before)
    // The whole input, after all that: imported.
    expect((await run(['import', '--dir', fresh], good)).out).toBe('imported 4 new sessions, 13 events\n')
  })
})

describe('delete', () => {
  it('deletes sessions; a missing id among them is SESSION_NOT_FOUND and nothing is deleted', async () => {
    const path = join(dir, 'del-simple')
    await buildStore(path, { damaged: true })
    const before = await files(join(path, 'sessions'))
    const missing = await run(['delete', 'other', 'forked', 'nobody', '--dir', path, '--json'])
    expect(missing.code).toBe(1)
    expect(jsonError(missing)).toMatchObject({ code: 'SESSION_NOT_FOUND', message: expect.stringContaining('"nobody"') })
    expect(await files(join(path, 'sessions'))).toEqual(before)

    expect(await run(['delete', 'other', 'broken', '--dir', path])).toMatchObject({ code: 0, out: 'deleted 2 sessions: other, broken\n' })
    expect(await ids(path)).toEqual(['forked', 'ggkid', 'grandkid', 'helper', 'parent'])
    expect((await run(['verify', '--dir', path])).code).toBe(0) // the damaged one is gone
    // Without --tree, a parent goes alone: its children stay, and its own parent lists it as unavailable.
    expect(JSON.parse((await run(['delete', 'grandkid', '--dir', path, '--json'])).out)).toEqual({ deleted: ['grandkid'] })
    expect(await ids(path)).toEqual(['forked', 'ggkid', 'helper', 'parent'])
    expect((await run(['tree', 'helper', '--dir', path])).out).toBe('helper  subagent\n└─ grandkid  ! unavailable\n')
    expect((await run(['delete', 'grandkid', '--dir', path])).code).toBe(1) // already gone
  })

  it('--tree deletes the descendants too, children before their parents', async () => {
    const path = join(dir, 'del-tree')
    await buildStore(path)
    const r = await run(['delete', 'helper', '--tree', '--dir', path, '--json'])
    expect(r.code).toBe(0)
    expect(JSON.parse(r.out)).toEqual({ deleted: ['ggkid', 'grandkid', 'helper'] })
    expect(await ids(path)).toEqual(['forked', 'other', 'parent'])
    expect((await run(['tree', 'parent', '--dir', path])).out).toContain('├─ helper  ! unavailable')
    // A fork goes before the session it was forked from.
    expect(JSON.parse((await run(['delete', 'parent', 'forked', '--tree', '--dir', path, '--json'])).out)).toEqual({ deleted: ['forked', 'parent'] })
    expect(await ids(path)).toEqual(['other'])
    expect((await run(['verify', '--dir', path])).out).toBe('ok: 1 sessions, 1 events, no damage\n')
  })

  it('a descendant that cannot be read: delete --tree refuses (CORRUPT_LOG, nothing deleted), export --tree leaves it out (exit 1)', async () => {
    const path = join(dir, 'del-damaged-child')
    await buildStore(path)
    const log = join(path, 'sessions', folderOf('grandkid'), 'events.log')
    const bytes = await readFile(log)
    bytes[20] = bytes[20]! ^ 0xff
    await writeFile(log, bytes)
    const before = await files(join(path, 'sessions'))
    const refused = await run(['delete', 'parent', '--tree', '--dir', path, '--json'])
    expect(refused.code).toBe(1)
    expect(jsonError(refused)).toMatchObject({
      code: 'CORRUPT_LOG',
      message: expect.stringMatching(/tree under session "parent" cannot be read whole: session "grandkid", a subagent of "helper", cannot be read/),
    })
    expect(await files(join(path, 'sessions'))).toEqual(before)
    const exported = await run(['export', 'parent', '--tree', '--dir', path])
    expect(exported.code).toBe(1)
    expect(exported.err).toMatch(
      /^sessionfold: warning: session "grandkid", a subagent of "helper", cannot be read: .+; it was not exported \(CORRUPT_LOG\)\n$/,
    )
    expect(sessionLines(exported.out)).toEqual(['parent', 'helper'])
    // By id, the damaged session itself can be deleted; then the tree is whole again.
    expect((await run(['delete', 'grandkid', '--dir', path])).code).toBe(0)
    expect(JSON.parse((await run(['delete', 'parent', '--tree', '--dir', path, '--json'])).out)).toEqual({ deleted: ['helper', 'parent'] })
    expect(await ids(path)).toEqual(['forked', 'ggkid', 'other'])
  })

  it('refuses a session open for writing in another process (SESSION_LOCKED), deleting none of the others', async () => {
    const path = join(dir, 'del-locked')
    await buildStore(path)
    const holder = await holdWriter(path, 'grandkid')
    // The holder's own session may get a checkpoint meanwhile: every other file must stay.
    const others = async () => Object.fromEntries(Object.entries(await files(join(path, 'sessions'))).filter(([f]) => !f.startsWith(folderOf('grandkid'))))
    const sessionFolders = async () => (await readdir(join(path, 'sessions'))).sort()
    const before = await others()
    const folders = await sessionFolders()
    for (const args of [
      ['other', 'grandkid'],
      ['parent', '--tree'],
      ['other', 'helper', '--tree'],
    ]) {
      const r = await run(['delete', ...args, '--dir', path, '--json'])
      expect(r.code, args.join(' ')).toBe(1)
      expect(jsonError(r), args.join(' ')).toMatchObject({ code: 'SESSION_LOCKED', message: expect.stringContaining('"grandkid"') })
      expect(await others(), args.join(' ')).toEqual(before)
      expect(await sessionFolders(), args.join(' ')).toEqual(folders)
    }
    const human = await run(['delete', 'grandkid', '--dir', path])
    expect(human.err).toBe('sessionfold: session "grandkid" is open for writing; nothing was deleted (SESSION_LOCKED)\n')
    // The holder kept its lock (the refused delete released only the locks it took).
    expect(JSON.parse(await readFile(join(path, 'locks', `${folderOf('grandkid')}.lock`), 'utf8')).pid).toBe(holder.pid)
    expect((await run(['delete', 'other', '--dir', path])).code).toBe(0)
    // Once the writer is gone, its session can be deleted.
    holder.kill('SIGKILL')
    await new Promise((r) => holder.once('exit', r))
    expect(JSON.parse((await run(['delete', 'parent', '--tree', '--dir', path, '--json'])).out)).toEqual({ deleted: ['ggkid', 'grandkid', 'helper', 'parent'] })
    expect(await ids(path)).toEqual(['forked'])
  })
})
