// Security: ids never name a path outside the store, no prototype pollution, hostile worker answers, no eval (§6 client API, §7 durability)
// Security (issue 7): session ids never name a path outside the store, data keys and frames
// cannot pollute prototypes, what the worker sends is checked before the app sees it, and
// nothing constructs code from strings, so the SDK runs under a strict Content-Security-Policy.
import { spawnSync } from 'node:child_process'
import { readFileSync, readdirSync } from 'node:fs'
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative, resolve, sep } from 'node:path'
import fc from 'fast-check'
import { z } from 'zod'
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { defineProjection, isSessionfoldError, openStore, type ProjectionSnapshot, type SessionEvent } from 'sessionfold'
import { folderOf, idOfFolder } from '../../src/backends/fs/layout'
import { SESSION_ID_PATTERN } from '../../src/core/limits'
import { ensureBuilt, root } from '../support/ensure-built'
import { until } from '../contract/client'
import { expectCode } from '../support/helpers'

const fixture = (name: string) => new URL(`../fixtures/${name}`, import.meta.url)
const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort()
const unpolluted = () => {
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_KEYS)
  expect(({} as Record<string, unknown>).polluted).toBeUndefined()
  expect(Object.getPrototypeOf({})).toBe(Object.prototype)
}

/** Windows device names, which a folder must never be, with or without an extension. */
const DEVICE = /^(con|prn|aux|nul|conin\$|conout\$|com[0-9\u00b9\u00b2\u00b3]|lpt[0-9\u00b9\u00b2\u00b3])(\..*)?$/i

/** Ids a path-minded attacker would try: traversal, separators, NUL, devices, look-alikes. */
const HOSTILE = [
  '..',
  '.',
  '../x',
  '..\\x',
  '/',
  '\\',
  'a/b',
  'a\\b',
  '/etc/passwd',
  'C:\\Windows',
  'C:',
  'a:b',
  '\\\\?\\C:\\x',
  '\\\\server\\share',
  'a\0',
  '\0',
  'CON.',
  'CON ',
  'nul.txt',
  'CONIN$',
  'COM\u00b9',
  'LPT\u00b2',
  '%2e%2e%2f',
  '..%2f',
  '\u2025',
  '\uff0e\uff0e',
  '\u2215',
  '\u29f8',
  '\u0430',
  '\uff41',
  'a\u200d',
  '\u212a',
  '\u0130',
  'x'.repeat(129),
  '',
  ' ',
  '~',
  '~root',
  '$HOME',
  '`x`',
  'a*',
  'a?',
  'a|b',
  'a"b',
  'a<b',
  'a>b',
]
/** Ids the data model (§2) allows that are special somewhere: devices on Windows, case-folded twins on macOS. */
const SPECIAL_VALID = [
  'CON',
  'con',
  'Con',
  'PRN',
  'AUX',
  'NUL',
  'nul',
  'COM1',
  'com9',
  'LPT1',
  'lpt9',
  'CONIN',
  '-',
  '_',
  '--',
  '-rf',
  'Agent',
  'agent',
  'AGENT',
  'aGeNt',
]

const arbitraryId = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 140 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }) },
  { weight: 3, arbitrary: fc.stringMatching(/^[A-Za-z0-9_-]{1,130}$/) },
  { weight: 2, arbitrary: fc.constantFrom(...HOSTILE, ...SPECIAL_VALID) },
  {
    weight: 2,
    arbitrary: fc.tuple(fc.constantFrom('', '..', '../', 'a/', '/', '\\', 'CON', 's-'), fc.stringMatching(/^[A-Za-z0-9_./\\-]{0,12}$/)).map(([a, b]) => a + b),
  },
)

/** Every path under `dir`, relative, with directories marked by a trailing '/'. */
async function tree(dir: string): Promise<string[]> {
  const out: string[] = []
  const walk = async (rel: string) => {
    for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${d.name}` : d.name
      out.push(d.isDirectory() ? `${p}/` : p)
      if (d.isDirectory()) await walk(p)
    }
  }
  await walk('')
  return out.sort()
}

let tmp: string
beforeEach(async () => {
  tmp = await mkdtemp(join(tmpdir(), 'sessionfold-security-'))
})
afterEach(async () => {
  await rm(tmp, { recursive: true, force: true })
})

describe('session ids never name a path outside the store', () => {
  it('folder names: only [a-z0-9_-] and a hex mask, never a device name, one per id even where case folds, and back to the id', () => {
    const folder = /^s-[a-z0-9_-]{1,128}(\.[0-9a-f]*[1-9a-f])?$/
    const check = (id: string) => {
      const name = folderOf(id)
      expect(name).toMatch(folder)
      expect(name).not.toMatch(DEVICE)
      expect(name.length).toBeLessThanOrEqual(163)
      expect(name.endsWith('.') || name.endsWith(' ')).toBe(false)
      expect(idOfFolder(name)).toBe(id)
    }
    for (const id of SPECIAL_VALID) check(id)
    fc.assert(fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,128}$/), check), { numRuns: 2000 })
    // Two ids never share a folder, even on a case-insensitive filesystem.
    fc.assert(
      fc.property(fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/), fc.stringMatching(/^[A-Za-z0-9_-]{1,12}$/), (a, b) => {
        if (a !== b) expect(folderOf(a).toLowerCase()).not.toBe(folderOf(b).toLowerCase())
      }),
      { numRuns: 2000 },
    )
    const twins = ['Agent', 'agent', 'AGENT', 'aGeNt'].map(folderOf)
    expect(new Set(twins.map((t) => t.toLowerCase())).size).toBe(4)
    // Names we did not make are not sessions.
    for (const name of ['s-..', 's-a/b', 's-CON', 's-agent.0', 's-agent.1.1', 's-agent.10', 'agent', 's-', '..', 's-a.g'])
      expect(idOfFolder(name)).toBeUndefined()
  })

  it('folderOf refuses every string outside the id pattern (fast-check)', async () => {
    fc.assert(
      fc.property(arbitraryId, (id) => {
        let threw: unknown
        try {
          folderOf(id)
        } catch (err) {
          threw = err
        }
        if (SESSION_ID_PATTERN.test(id)) expect(threw).toBeUndefined()
        else expect(isSessionfoldError(threw, 'INVALID_ARGUMENT')).toBe(true)
      }),
      { numRuns: 5000 },
    )
  })

  for (const worker of [false, true]) {
    it(`through the client (${worker ? 'worker_threads' : 'in this thread'}): any string is INVALID_ARGUMENT or a folder directly inside <dir>/sessions (fast-check)`, async () => {
      const dir = join(tmp, 'store')
      const store = await openStore({ storage: 'fs', dir, worker })
      const created = new Set<string>()
      let runs = 0
      try {
        await fc.assert(
          fc.asyncProperty(arbitraryId, async (id) => {
            runs++
            const valid = SESSION_ID_PATTERN.test(id)
            for (const call of [() => store.observe(id), () => store.openSession(id)] as (() => Promise<{ close(): Promise<void> }>)[]) {
              const err = await Promise.resolve()
                .then(call)
                .then(
                  (h) => h.close(),
                  (e: unknown) => e,
                )
              if (!valid) expect(isSessionfoldError(err, 'INVALID_ARGUMENT'), String(err)).toBe(true)
              else expect(created.has(id) ? err === undefined : isSessionfoldError(err, 'SESSION_NOT_FOUND'), String(err)).toBe(true)
            }
            if (!valid) await expectCode(store.deleteSession(id), 'INVALID_ARGUMENT')
            if (created.has(id)) return
            const got = await store.createSession({ id }).then(
              (s) => s,
              (e: unknown) => e,
            )
            if (!valid) {
              expect(isSessionfoldError(got, 'INVALID_ARGUMENT'), String(got)).toBe(true)
              return
            }
            expect(isSessionfoldError(got), String(got)).toBe(false)
            created.add(id)
            await (got as { close(): Promise<void> }).close()
          }),
          { numRuns: worker ? 150 : 400 },
        )
        // Nothing outside the store; inside it, one folder per created id, named by folderOf.
        const all = await tree(tmp)
        for (const p of all) {
          expect(resolve(tmp, p).startsWith(dir + sep) || resolve(tmp, p) === dir, p).toBe(true)
          for (const part of p.split('/')) expect(part, p).not.toMatch(DEVICE)
        }
        const folders = (await readdir(join(dir, 'sessions'))).sort()
        expect(folders).toEqual([...created].map(folderOf).sort())
        expect((await store.listSessions({ limit: 1000 })).map((h) => h.id).sort()).toEqual([...created].sort())
        expect(runs).toBe(worker ? 150 : 400)
      } finally {
        await store.close()
      }
    })
  }

  it('CON, NUL, LPT1 and case twins are ordinary sessions with folders of their own', async () => {
    const dir = join(tmp, 'store')
    const store = await openStore({ storage: 'fs', dir, worker: false })
    for (const id of SPECIAL_VALID) {
      const s = await store.createSession({ id })
      await s.append({ type: 'app/who', data: id })
      await s.close()
    }
    expect((await readdir(join(dir, 'sessions'))).sort()).toEqual(SPECIAL_VALID.map(folderOf).sort())
    for (const id of SPECIAL_VALID) {
      const v = await store.observe(id)
      const data: unknown[] = []
      for await (const e of v.events()) data.push(e.data)
      expect(data).toEqual([id])
      await v.close()
    }
    await store.close()
    expect(relative(dir, join(dir, 'sessions', folderOf('CON')))).toBe(`sessions${sep}s-con.7`)
  })

  it('a bad openStore option creates no directory', async () => {
    const dir = join(tmp, 'never')
    for (const options of [{ checkpoint: { everyEvents: 0 } }, { checkpoint: { everyMs: -5 } }, { maxEventBytes: 0 }, { durability: 'soon' }]) {
      for (const worker of [false, true]) await expectCode(openStore({ storage: 'fs', dir, worker, ...(options as object) }), 'INVALID_ARGUMENT')
    }
    expect(await readdir(tmp)).toEqual([])
  })
})

describe('prototype pollution', () => {
  it('an app unit named like an Object.prototype member (valueOf, hasOwnProperty, isPrototypeOf, constructor) is pushed and read as a value', async () => {
    const keys = ['valueOf', 'hasOwnProperty', 'isPrototypeOf', 'propertyIsEnumerable', 'toString', 'constructor']
    const units = keys.map((key) =>
      defineProjection({
        key,
        stateVersion: 1,
        stateSchema: z.number(),
        init: () => 0,
        apply: (n: number, e: SessionEvent) => (e.type === 'app/tick' ? n + 1 : n),
        view: { schema: z.number(), view: (n: number) => n * 10 },
      }),
    )
    const store = await openStore({ storage: 'memory', worker: false, projections: units })
    const s = await store.createSession({ id: 'keys' })
    const v = await store.observe('keys')
    await s.append([{ type: 'app/tick' }, { type: 'app/tick' }])
    await until(() => v.projections.snapshot().asOfSeq === 1)
    for (const view of [s, v]) {
      expect(view.projections.error).toBeUndefined()
      for (const key of keys) expect(view.projections.get(key as never)).toBe(20)
    }
    // A key nobody registered reads null, not Object.prototype's member.
    expect(v.projections.get('__defineGetter__' as never)).toBeNull()
    expect(v.projections.get('__proto__' as never)).toBeNull()
    await store.close()
    unpolluted()
  })

  it('unknown keys read null, not inherited members', async () => {
    const store = await openStore({ storage: 'memory', worker: false })
    const s = await store.createSession({ id: 'x' })
    for (const key of ['valueOf', 'toString', 'constructor', 'hasOwnProperty', '__proto__']) expect(s.projections.get(key as never)).toBeNull()
    await store.close()
  })

  it('frames with __proto__, bad keys or Object.prototype-named built-in lookups never reach the app or pollute anything', async () => {
    const store = await openStore({ storage: 'memory', worker: false })
    const push = (frames: unknown[]) => (store as unknown as { _push: (p: unknown) => void })._push({ kind: 'frames', frames })
    let n = 1
    const bad: [string, unknown][] = [
      ['__proto__ in values', { seq: 5, values: JSON.parse('{"__proto__":{"polluted":"yes"}}'), faults: {} }],
      ['__proto__ in faults', { seq: 5, values: {}, faults: JSON.parse('{"__proto__":"corrupt"}') }],
      ['a key that is no projection key', { seq: 5, values: { 'a b': 1 }, faults: {} }],
      ['a Date value', { seq: 5, values: { valueOf: new Date() }, faults: {} }],
    ]
    for (const [what, frame] of bad) {
      const s = await store.createSession()
      const before = s.projections.snapshot()
      expect(() => push([{ n: n++, sessionId: s.id, ...(frame as object) }]), what).not.toThrow()
      await until(() => s.projections.error !== undefined)
      expect(s.projections.error?.code, what).toBe('PROJECTIONS_UNAVAILABLE')
      expect(s.projections.snapshot().values, what).toEqual(before.values)
      expect(s.projections.get('polluted' as never)).toBeNull()
      unpolluted()
    }
    // `constructor` is a fine app key: its value is data, kept as an own value.
    const s = await store.createSession()
    push([{ n: n++, sessionId: s.id, seq: 5, values: JSON.parse('{"constructor":{"prototype":{"polluted":"yes"}}}'), faults: {} }])
    await until(() => s.projections.snapshot().asOfSeq === 5)
    expect(s.projections.error).toBeUndefined()
    expect(s.projections.get('constructor' as never)).toEqual({ prototype: { polluted: 'yes' } })
    await store.close()
    unpolluted()
  })

  it('a stored header or checkpoint carrying __proto__ pollutes nothing; the values are the refold', async () => {
    const dir = join(tmp, 'store')
    let store = await openStore({ storage: 'fs', dir, worker: false })
    const s = await store.createSession({ id: 'h' })
    await s.append([
      { type: 'turn/start', time: 1 },
      { type: 'turn/end', time: 4 },
    ])
    const refold = s.projections.snapshot().values
    await store.close()
    const folder = join(dir, 'sessions', folderOf('h'))
    const files = await readdir(folder)
    const checkpoint = files.find((f) => /checkpoint/.test(f))
    expect(checkpoint).toBeDefined()
    const row = readFileSync(join(folder, checkpoint!), 'utf8')
    await writeFile(join(folder, checkpoint!), row.replace('"rows":{', '"rows":{"__proto__":{"ver":1,"seq":0,"val":{"polluted":"yes"}},'))
    store = await openStore({ storage: 'fs', dir, worker: false })
    const v = await store.observe('h')
    expect(v.projections.snapshot().values).toEqual(refold)
    await v.close()
    await store.close()
    // A header with a __proto__ key is not a header this store wrote.
    const headerFile = files.find((f) => /header/.test(f))!
    const header = readFileSync(join(folder, headerFile), 'utf8')
    await writeFile(join(folder, headerFile), header.replace('{', '{"__proto__":{"polluted":"yes"},'))
    store = await openStore({ storage: 'fs', dir, worker: false })
    const listed = await store.listSessions().catch((e: unknown) => e)
    if (Array.isArray(listed)) for (const h of listed) expect(Object.keys(h)).not.toContain('__proto__')
    else expect(isSessionfoldError(listed), String(listed)).toBe(true)
    const err = await store.observe('h').then(
      (x) => x.header,
      (e: unknown) => e,
    )
    if (isSessionfoldError(err)) expect(err.code).toBe('CORRUPT_LOG')
    else expect(Object.keys(err as object)).not.toContain('__proto__')
    await store.close()
    unpolluted()
  })
})

describe('a broken or hostile worker', () => {
  const open = () => openStore({ storage: 'memory', workerUrl: fixture('evil-worker.ts') })

  it('bad handles (header, snapshot, handle number) reject with PROJECTIONS_UNAVAILABLE naming the session', async () => {
    const store = await open()
    try {
      for (const id of [
        'h-header-id',
        'h-header-origin',
        'h-header-extra',
        'h-header-proto',
        'h-snapshot-date',
        'h-snapshot-proto',
        'h-snapshot-seq',
        'h-handle',
        'h-null',
      ]) {
        const err = await expectCode(store.createSession({ id }), 'PROJECTIONS_UNAVAILABLE')
        expect(err.message).toContain(`"${id}"`)
        unpolluted()
      }
      // The handles were closed again: their locks are free, and a sane call works.
      const ok = await store.createSession({ id: 'fine' })
      expect(ok.projections.get('subagentTiming')).toEqual({ turns: 0, settledMs: 0, runningSince: null })
    } finally {
      await store.close()
    }
  })

  it("bad frames stop that session's values with PROJECTIONS_UNAVAILABLE; others keep following", async () => {
    const store = await open()
    try {
      const fine = await store.createSession({ id: 'fine' })
      const kinds = [
        'frame-proto',
        'frame-date',
        'frame-map',
        'frame-catalog',
        'frame-timing',
        'frame-seq',
        'frame-fault',
        'frame-key',
        'frame-id',
        'frame-grown-catalog',
        'frame-grown-gap',
        'frame-grown-timing',
        'frame-grown-both',
        'frame-grown-date',
        'frame-grown-proto',
      ]
      for (const id of kinds) {
        const s = await store.createSession({ id })
        const before = s.projections.snapshot().values
        const seen: ProjectionSnapshot[] = []
        s.projections.subscribe((snap) => seen.push(snap))
        // The append is durable; its handle's values cannot follow it, which the app is told.
        const result = await s.append({ type: 'turn/start', time: 7 }).then(
          (r) => r,
          (e: unknown) => e,
        )
        if (!('firstSeq' in (result as object))) expect(isSessionfoldError(result, 'PROJECTIONS_UNAVAILABLE'), `${id}: ${String(result)}`).toBe(true)
        await until(() => s.projections.error !== undefined)
        expect(s.projections.error?.code, id).toBe('PROJECTIONS_UNAVAILABLE')
        expect(s.projections.snapshot().values, id).toEqual(before)
        for (const snap of seen) expect(snap.values, id).toEqual(before)
        unpolluted()
      }
      await fine.append({ type: 'turn/start', time: 1 })
      expect(fine.projections.error).toBeUndefined()
      expect(fine.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 0, runningSince: 1 })
      // A frame that names no session (null) could be anyone's: every handle stops following,
      // and the append waiting to read its own write rejects instead of waiting forever.
      const lost = await store.createSession({ id: 'frame-null' })
      await expectCode(lost.append({ type: 'turn/start', time: 9 }), 'PROJECTIONS_UNAVAILABLE')
      for (const h of [lost, fine]) expect(h.projections.error?.code).toBe('PROJECTIONS_UNAVAILABLE')
      expect(fine.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 0, runningSince: 1 })
    } finally {
      await store.close()
    }
  })

  it('a bad verify report rejects with PROJECTIONS_UNAVAILABLE', async () => {
    const store = await open()
    try {
      await (await store.createSession({ id: 'sound' })).close()
      expect(await store.verify()).toMatchObject({ sessions: 1, damaged: [] })
      await (await store.createSession({ id: 'verify-bad' })).close()
      await expectCode(store.verify(), 'PROJECTIONS_UNAVAILABLE')
    } finally {
      await store.close()
    }
  })

  it('bad append results, event pages, session lists and child rows reject with PROJECTIONS_UNAVAILABLE', async () => {
    const store = await open()
    try {
      const a = await store.createSession({ id: 'append-bad' })
      await expectCode(a.append({ type: 'x' }), 'PROJECTIONS_UNAVAILABLE')
      for (const id of ['read-seq', 'read-data', 'read-extra']) {
        const s = await store.createSession({ id })
        await s.append({ type: 'x', data: { ok: true } })
        const got: SessionEvent[] = []
        const err = await expectCode(
          (async () => {
            for await (const e of s.events()) got.push(e)
          })(),
          'PROJECTIONS_UNAVAILABLE',
        )
        expect(err.message).toContain(`"${id}"`)
        expect(got).toEqual([])
      }
      await expectCode(store.listSessions({ after: 'list-bad' }), 'PROJECTIONS_UNAVAILABLE')
      const p = await store.createSession({ id: 'children-bad' })
      await expectCode(p.listChildren(), 'PROJECTIONS_UNAVAILABLE')
      unpolluted()
    } finally {
      await store.close()
    }
  })
})

describe('no eval, no new Function: a strict Content-Security-Policy holds', () => {
  beforeAll(ensureBuilt, 120_000)

  const bundles = (): string[] => {
    const files = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
        d.isDirectory() ? files(join(dir, d.name)) : /\.(c?js|mjs)$/.test(d.name) ? [join(dir, d.name)] : [],
      )
    return [...files(join(root, 'dist/node')), ...files(join(root, 'dist/browser'))]
  }

  it('our bundles never name eval or Function, the self-contained browser worker included (zod/mini parses without compiling)', () => {
    const worker = join(root, 'dist/browser/worker-entry.browser.js')
    const all = bundles()
    expect(all).toContain(worker)
    for (const f of all) {
      // Code, not comments (zod's explain why it skips its probe under jitless).
      const code = readFileSync(f, 'utf8')
        .replace(/\/\*[\s\S]*?\*\//g, '')
        .replace(/^\s*\/\/.*$/gm, '')
      expect(code.match(/\beval\s*\(|new\s+Function\b|setTimeout\(\s*['"`]|setInterval\(\s*['"`]/g), f).toBeNull()
      expect(code.match(/\bFunction\b/g), f).toBeNull()
    }
    // Classic zod's object schemas bring its `new Function` probe and parser compiler; the
    // worker's schemas are zod/mini's, whose objects are interpreted only: neither is in it.
    // (zod-jitless.ts stays: the runtime test below shows nothing is compiled either way.)
  })

  it('the default browser worker constructs no Function and evaluates nothing while it works (zod runs jitless)', () => {
    const r = spawnSync(process.execPath, [fileOf('no-eval-probe.mjs'), join(root, 'dist/browser/worker-entry.browser.js')], {
      encoding: 'utf8',
      timeout: 60_000,
    })
    expect(r.status, r.stderr).toBe(0)
    const out = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as { made: string[]; catalog: string[]; children: string[]; events: number }
    expect(out.catalog).toEqual(['helper', 'CI']) // it worked: spawn, external, a cold read from the checkpoint
    expect(out.children).toEqual(['child', 'child'])
    expect(out.events).toBe(4)
    expect(out.made).toEqual([])
  })

  it('the demo pages set a CSP without unsafe-eval (test/reliability/demo-page.test.ts runs them under it)', () => {
    for (const page of ['index.html', 'durability.html', 'tabs.html']) {
      const html = readFileSync(join(root, 'examples/demo-page', page), 'utf8')
      const csp = /http-equiv="Content-Security-Policy" content="([^"]+)"/.exec(html)?.[1]
      expect(csp, page).toBeDefined()
      expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*(\*|data:|blob:|unsafe-inline)/)
      expect(csp).toMatch(/script-src 'self'(;|$)/)
    }
  })
})

function fileOf(name: string): string {
  return fixture(name).pathname
}
