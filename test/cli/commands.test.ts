// Contract: §8 command line — ls, show, tree, events --follow, verify, export, import; exit statuses 0, 1, 2 (docs/CONTRACT.md)
// The sessionfold command line against a store built here: a tree of
// subagents, a fork, a damaged session, and a writer running in another process. Most
// commands run in this process through main() (the same code as the executable); exit codes,
// SIGINT and the built executable are checked on real child processes.
import { spawn, spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/run-cli'
import { openStore } from 'sessionfold'
import { fileURLToPath } from 'node:url'
import { appV1, appV2 } from '../fixtures/chat-events'
import { folderOf } from '../../src/backends/fs/layout'
import { until as waitUntil } from '../support/helpers'

const root = new URL('../..', import.meta.url).pathname
const cliTs = join(root, 'src/cli/sessionfold.ts')
const fixture = (name: string) => join(root, 'test/fixtures', name)

let dir: string
let store: string
let writer: ReturnType<typeof spawn>
let writerOut = ''

/** Runs a command in this process; stdout and stderr as text. */
const run = (args: string[], options: { stdin?: string; tty?: boolean } = {}) => runCli(args, options)

/** The store's files with sizes and mtimes: a read-only command must leave it exactly so. */
async function files(path: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of await readdir(path, { recursive: true })) {
    const st = await stat(join(path, name)).catch(() => undefined) // the writer's temp files come and go
    if (st?.isFile()) out[name] = `${st.size}@${st.mtimeMs}`
  }
  return out
}

const lastSeq = () => Number(/seq (\d+)\n(?!.*seq)/s.exec(writerOut)?.[1] ?? -1)

const until = (cond: () => boolean) => waitUntil(cond, 30_000)

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-cli-'))
  store = join(dir, 'store')
  const s = await openStore({ dir: store, worker: false })
  const parent = await s.createSession({ id: 'parent', cwd: '/proj' })
  await parent.append([{ type: 'turn/start' }, { type: 'app/msg', data: { text: 'hi' } }, { type: 'turn/end' }])
  const helper = await parent.spawn({ mode: 'continuable', label: 'helper', id: 'helper', events: [{ type: 'app/task' }] })
  await (await helper.spawn({ mode: 'one-shot', id: 'grandkid' })).close()
  await (await parent.spawn({ mode: 'one-shot', id: 'gone' })).close()
  await parent.recordExternal({ childId: 'remote', label: 'elsewhere' })
  await (await parent.fork({ at: 2, id: 'forked' })).close()
  // An unsupported fact (as newer code would write it; an append here refuses it), imported: the catalog faults.
  const header = { version: 1, id: 'faulty', createdAt: 1, seedLength: 0, delegationDepth: 0, origin: 'root' } as const
  await s.applyChanges({ v: 1, sessions: [{ header, from: 0, events: [{ seq: 0, type: 'subagent/catalog', time: 1, data: { v: 9, childId: 'x' } }] }] })
  const broken = await s.createSession({ id: 'broken' })
  for (let i = 0; i < 3; i++) await broken.append({ type: 'app/e', data: 'x'.repeat(50) })
  await helper.close()
  await parent.close()
  await broken.close()
  await s.deleteSession('gone') // the catalog still names it: an unavailable row
  await s.close()
  // A flipped byte inside the first record, whole records after it: CORRUPT_LOG, not a torn tail.
  const log = join(store, 'sessions', folderOf('broken'), 'events.log')
  const bytes = await readFile(log)
  bytes[20] = bytes[20]! ^ 0xff
  await writeFile(log, bytes)

  writer = spawn(process.execPath, ['--import', 'tsx', fixture('cli-writer.ts'), store], { stdio: ['ignore', 'pipe', 'inherit'] })
  writer.stdout!.on('data', (c: Buffer) => (writerOut += c.toString()))
  await until(() => lastSeq() >= 2)
})

afterAll(async () => {
  writer?.kill('SIGKILL')
  await rm(dir, { recursive: true, force: true })
})

describe('sessionfold command line', () => {
  it('ls: sessions newest first with event counts; the damaged one is shown and the exit status is 1', async () => {
    const { code, out } = await run(['ls', '--dir', store, '--json'])
    expect(code).toBe(1)
    const rows = JSON.parse(out) as { id: string; header?: { createdAt: number }; events?: number; error?: { code: string } }[]
    const ok = rows.filter((r) => r.header)
    expect(ok.map((r) => r.header!.createdAt)).toEqual([...ok.map((r) => r.header!.createdAt)].sort((a, b) => b - a))
    expect(rows.find((r) => r.id === 'parent')).toMatchObject({ events: 6 })
    expect(rows.find((r) => r.id === 'helper')).toMatchObject({ events: 3 })
    expect(rows.find((r) => r.id === 'broken')).toMatchObject({ error: { code: 'CORRUPT_LOG' } })
    expect(rows.find((r) => r.id === 'live')!.events).toBeGreaterThan(0)
    const human = await run(['ls', '--dir', store])
    expect(human.out).toMatch(/^ID\s+CREATED\s+ORIGIN\s+EVENTS/)
    expect(human.out).toMatch(/forked\s+\S+\s+fork\s+2\s+parent\s+\/proj/)
    expect(human.out).toMatch(/broken\s+-\s+DAMAGED/)
  })

  it('show: header, counts, every projection value and faults', async () => {
    const { code, out } = await run(['show', 'parent', '--dir', store, '--json'])
    expect(code).toBe(0)
    const shown = JSON.parse(out)
    expect(shown).toMatchObject({ header: { id: 'parent', cwd: '/proj', origin: 'root' }, events: 6, children: 3, activity: 'inactive', faults: [] })
    expect(shown.values.subagentCatalog.map((c: { id: string }) => c.id)).toEqual(['helper', 'gone', 'remote'])
    expect(Object.keys(shown.values).sort()).toEqual(['sessionMeta', 'subagent', 'subagentCatalog', 'subagentTiming'])
    const human = await run(['show', 'helper', '--dir', store])
    expect(human.out).toContain('origin    subagent of parent')
    expect(human.out).toContain('identity  continuable "helper" (descriptor at seq 0)')
    expect((await run(['show', 'live', '--dir', store, '--json'])).out).toContain('"activity": "running"')
    const faulty = await run(['show', 'faulty', '--dir', store])
    expect(faulty.code).toBe(0)
    expect(faulty.out).toContain('children  unknown (catalog faulted)')
    expect(faulty.out).toMatch(/faults\n {2}subagentCatalog: corrupt \(.+\)/)
    const damaged = await run(['show', 'broken', '--dir', store])
    expect(damaged.code).toBe(1)
    expect(damaged.err).toContain('CORRUPT_LOG')
    expect((await run(['show', 'nobody', '--dir', store])).err).toContain('SESSION_NOT_FOUND')
  })

  it('tree: the recursive children with mode, label, activity and diagnostics', async () => {
    const { code, out } = await run(['tree', 'parent', '--dir', store])
    expect(code).toBe(0)
    expect(out).toBe(
      [
        'parent  root',
        '├─ helper  continuable  "helper"  inactive',
        '│  └─ grandkid  one-shot  inactive',
        '├─ gone  ! unavailable',
        '└─ remote  external  "elsewhere"',
        '',
      ].join('\n'),
    )
    const json = JSON.parse((await run(['tree', 'parent', '--dir', store, '--json'])).out)
    expect(json.map((r: { id: string; depth: number }) => [r.id, r.depth])).toEqual([
      ['helper', 0],
      ['grandkid', 1],
      ['gone', 0],
      ['remote', 0],
    ])
    await until(() => lastSeq() >= 8) // the writer has spawned a child, open while it ran
    const live = await run(['tree', 'live', '--dir', store])
    // The writer holds "live" (running); its children are open only while being spawned.
    expect(live.out).toMatch(/^live {2}root {2}running\n[├└]─ livekid5 {2}one-shot {2}(inactive|running)\n/)
  })

  it('show and tree --at N: the session as it was after its first N events', async () => {
    const shown = JSON.parse((await run(['show', 'parent', '--at', '4', '--dir', store, '--json'])).out)
    expect(shown).toMatchObject({ header: { id: 'parent' }, events: 4, at: 4, length: 6, children: 1 })
    expect(shown.values.subagentCatalog.map((c: { id: string }) => c.id)).toEqual(['helper'])
    expect(shown.values.subagentTiming).toMatchObject({ turns: 1 })
    const human = await run(['show', 'parent', '--at=2', '--dir', store])
    expect(human.code).toBe(0)
    expect(human.out).toContain('events    2 of 6: as it was after event seq 1')
    expect(human.out).toContain('children  0')
    const tree = await run(['tree', 'parent', '--at', '4', '--dir', store])
    expect(tree.out).toBe(
      ['parent  root  (its children as of 4 of 6 events)', '└─ helper  continuable  "helper"  inactive', '   └─ grandkid  one-shot  inactive', ''].join('\n'),
    )
    const past = await run(['show', 'parent', '--at', '7', '--dir', store])
    expect(past.code).toBe(1)
    expect(past.err).toContain('INVALID_ARGUMENT')
    expect(past.err).toContain('0..6')
    const bad = await run(['tree', 'parent', '--at', '-1', '--dir', store])
    expect(bad.code).toBe(2)
    expect(bad.err).toContain('--at must be an integer >= 0')
    expect((await run(['ls', '--at', '1', '--dir', store])).err).toContain('ls has no option --at')
  })

  it('events: NDJSON with --from and --to', async () => {
    const { code, out } = await run(['events', 'parent', '--from', '1', '--to', '3', '--dir', store])
    expect(code).toBe(0)
    const lines = out
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
    expect(lines.map((e) => [e.seq, e.type])).toEqual([
      [1, 'app/msg'],
      [2, 'turn/end'],
    ])
    expect(lines[0].data).toEqual({ text: 'hi' })
  })

  it('events --definitions: each event at its latest version, as the app reads it; stored bytes as they are without it', async () => {
    const dir = join(store, '..', 'with-versions')
    const v1 = await openStore({ dir, worker: false, ...appV1 })
    const s = await v1.createSession({ id: 'chat' })
    await s.append([{ type: 'fixture/message', data: { text: 'hi' } }, { type: 'turn/start' }])
    await s.close()
    await v1.close()
    const v2 = await openStore({ dir, worker: false, ...appV2 })
    const w = await v2.openSession('chat')
    await w.append({ type: 'fixture/message', data: { role: 'assistant', text: 'yo' } })
    await w.close()
    await v2.close()
    const lines = (out: string) =>
      out
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    const stored = await run(['events', 'chat', '--dir', dir])
    expect(lines(stored.out).map((e) => [e.v, e.data])).toEqual([
      [undefined, { text: 'hi' }],
      [undefined, null],
      [2, { role: 'assistant', text: 'yo' }],
    ])
    const definitions = fileURLToPath(new URL('../fixtures/chat-definitions.mjs', import.meta.url))
    const latest = await run(['events', 'chat', '--dir', dir, '--definitions', definitions])
    expect(latest.code).toBe(0)
    expect(lines(latest.out).map((e) => [e.v, e.data])).toEqual([
      [3, { role: 'user', parts: ['hi'] }],
      [undefined, null],
      [3, { role: 'assistant', parts: ['yo'] }],
    ])
    // A module that cannot be loaded, or holds no definition, is refused before the store opens.
    await writeFile(join(dir, 'none.mjs'), 'export const answer = 42\n')
    for (const file of [join(dir, 'nowhere.mjs'), join(dir, 'none.mjs')]) {
      const bad = await run(['events', 'chat', '--dir', join(dir, 'not-made'), '--definitions', file])
      expect(bad.code).toBe(1)
      expect(bad.err).toContain('INVALID_ARGUMENT')
      expect(existsSync(join(dir, 'not-made'))).toBe(false)
    }
    expect((await run(['show', 'chat', '--dir', dir, '--definitions', definitions])).err).toContain('show has no option --definitions')
  })

  it('verify: a progress bar on a terminal, plain lines otherwise, exit 1 and a clear report on damage', async () => {
    const tty = await run(['verify', '--dir', store], { tty: true })
    expect(tty.code).toBe(1)
    expect(tty.err).toMatch(/\r\[#+-*\] \d+% \d+\/\d+ events/)
    expect(tty.out).toMatch(/^DAMAGED: 1 of \d+ sessions/)
    expect(tty.out).toMatch(/ {2}broken {2}CORRUPT_LOG {2}.*damaged/)
    const plain = await run(['verify', '--dir', store])
    expect(plain.err).toMatch(/^verified 0\/\d+ events\n/)
    expect(plain.err).not.toContain('\r')
    const json = JSON.parse((await run(['verify', '--dir', store, '--json'])).out)
    expect(json.damaged).toEqual([{ id: 'broken', code: 'CORRUPT_LOG', detail: expect.any(String) }])
    // A store without damage: exit 0.
    const clean = join(dir, 'clean')
    const s = await openStore({ dir: clean, worker: false })
    await (await s.createSession({ id: 'a' })).append({ type: 'app/e' })
    await s.close()
    await rm(join(clean, 'locks'), { recursive: true })
    const before = await files(clean)
    expect(await run(['verify', '--dir', clean])).toMatchObject({ code: 0, out: 'ok: 1 sessions, 1 events, no damage\n' })
    expect((await run(['show', 'a', '--dir', clean, '--json'])).out).toContain('"activity": "inactive"')
    expect(await files(clean)).toEqual(before)
    expect(existsSync(join(clean, 'locks'))).toBe(false)
  })

  it('read-only commands change no file, take no lock and do not hold up the writer', async () => {
    // The live session's files, the store's change feed (feed.log), which the writer's appends go
    // on growing, and the session index (index/), which the writer's engine moves with them.
    const ignoreLive = (f: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(f).filter(
          ([k]) => !k.includes('s-live') && !k.startsWith('locks') && !k.startsWith('tmp') && k !== 'feed.log' && !k.startsWith('index/'),
        ),
      )
    const before = ignoreLive(await files(store))
    const seqBefore = lastSeq()
    for (const args of [['ls'], ['show', 'live'], ['show', 'parent'], ['tree', 'live'], ['events', 'live'], ['verify'], ['export', 'live', 'parent']]) {
      const r = await run([...args, '--dir', store])
      expect(r.err, args.join(' ')).not.toContain('SESSION_LOCKED')
    }
    expect(ignoreLive(await files(store))).toEqual(before)
    // The writer kept its lock and kept appending all along.
    expect(JSON.parse(await readFile(join(store, 'locks', `${folderOf('live')}.lock`), 'utf8')).pid).toBe(writer.pid)
    const seqAfter = lastSeq()
    await until(() => lastSeq() > Math.max(seqAfter, seqBefore) + 2)
  })

  it("events --follow streams the other process's appends until SIGINT (exit 0)", async () => {
    const follower = spawn(process.execPath, ['--import', 'tsx', cliTs, 'events', 'live', '--follow', '--dir', store], { stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    follower.stdout.on('data', (c: Buffer) => (out += c.toString()))
    const start = lastSeq()
    await until(() => out.split('\n').filter(Boolean).length > start + 10)
    follower.kill('SIGINT')
    const code = await new Promise((r) => follower.once('exit', r))
    expect(code).toBe(0)
    const seqs = out
      .trim()
      .split('\n')
      .map((l) => (JSON.parse(l) as { seq: number }).seq)
    expect(seqs).toEqual(seqs.map((_, i) => i)) // every event, in order, none twice
    expect(seqs.length).toBeGreaterThan(start + 10)
  })

  it('export then import, twice: the second import changes nothing', async () => {
    const exported = await run(['export', 'parent', 'helper', 'grandkid', 'forked', '--dir', store])
    expect(exported.code).toBe(0)
    const copy = join(dir, 'copy')
    const first = await run(['import', '--dir', copy, '--json'], { stdin: exported.out })
    expect(first.code).toBe(0)
    expect(JSON.parse(first.out)).toMatchObject({ copiedSessions: 4, copiedEvents: 6 + 3 + 1 + 2, conflicts: [], skipped: [] })
    const snapshot = await files(join(copy, 'sessions'))
    const second = await run(['import', '--dir', copy]) // no input: not an export
    expect(second).toMatchObject({ code: 1, out: '' })
    expect(second.err).toContain('INVALID_ARGUMENT')
    const third = await run(['import', '--dir', copy], { stdin: exported.out })
    expect(third).toMatchObject({ code: 0, out: 'imported 0 new sessions, 0 events\n' })
    expect(await files(join(copy, 'sessions'))).toEqual(snapshot)
    for (const id of ['parent', 'helper', 'forked']) {
      expect((await run(['events', id, '--dir', copy])).out).toBe((await run(['events', id, '--dir', store])).out)
      expect(JSON.parse((await run(['show', id, '--dir', copy, '--json'])).out)).toEqual(JSON.parse((await run(['show', id, '--dir', store, '--json'])).out))
    }
    // On a terminal, a progress bar of the events applied.
    const shown = await run(['import', '--dir', join(dir, 'copy2')], { stdin: exported.out, tty: true })
    expect(shown).toMatchObject({ code: 0, out: 'imported 4 new sessions, 12 events\n' })
    expect(shown.err).toMatch(/\r\[#+\] 100% 12\/12 events\n$/)
    // A bad line anywhere: nothing is written.
    const broken = exported.out.replace('"seq":2', '"seq":7')
    const bad = await run(['import', '--dir', join(dir, 'never')], { stdin: broken })
    expect(bad.code).toBe(1)
    expect(bad.err).toContain('INVALID_ARGUMENT')
    expect(existsSync(join(dir, 'never'))).toBe(false)
  })

  it('usage errors print usage and exit 2; the built executable runs', async () => {
    for (const args of [
      [],
      ['bogus'],
      ['ls', 'extra'],
      ['show'],
      ['events', 'a', '--from', 'x'],
      ['events', 'a', '--to'],
      ['ls', '--follow'],
      ['show', '../etc'],
      ['export', '--tree'],
      ['delete'],
      ['delete', 'a', '--follow'],
      ['ls', '--json=1'],
    ]) {
      const r = await run(args)
      expect(r.code, args.join(' ')).toBe(2)
      // The usage of the command given, or of them all.
      expect(r.err).toContain(`Usage: sessionfold ${args.length === 0 || args[0] === 'bogus' ? '<command>' : args[0]}`)
    }
    expect((await run(['--help'])).code).toBe(0)
    const r0 = spawnSync(process.execPath, ['--import', 'tsx', cliTs, 'show', '--dir', store], { encoding: 'utf8' })
    expect(r0.status).toBe(2)
    expect(r0.stderr).toContain('show needs exactly one session id')
    const built = join(root, 'dist/node/cli.js')
    if (!existsSync(built)) return // npm test builds before running; a lone vitest run may not have
    const r = spawnSync(built, ['tree', 'parent', '--dir', store], { encoding: 'utf8' })
    expect(r.status).toBe(0)
    expect(r.stdout).toContain('└─ remote  external  "elsewhere"')
    expect(spawnSync(built, ['--help'], { encoding: 'utf8' }).stdout).toContain('Exit status: 0 done, 1 damage')
  })
})
