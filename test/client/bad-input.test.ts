// Contract: §6 client API, §7 durability — bad input gets its exact code and writes nothing (docs/CONTRACT.md)
// Bad input through the public client, one table run on fs (a real
// temp dir) and memory, each with the engine in worker_threads and in this thread. Every case
// gets its exact code, a message naming what it concerns, and a storage snapshot taken before
// and after it proves that nothing was written: for fs every file's path and content hash
// under the store's dir, for memory every session's header, events and projections as the
// store itself reports them.
import { createHash } from 'node:crypto'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  ERROR_CODES,
  Session,
  isSessionfoldError,
  openStore,
  type ErrorCode,
  type OpenStoreOptions,
  type SessionEvent,
  type SessionView,
  type Store,
} from 'sessionfold'

type Storage = 'fs' | 'memory'
const MODES: { name: string; storage: Storage; worker: boolean }[] = [
  { name: 'fs, worker_threads', storage: 'fs', worker: true },
  { name: 'fs, in this thread', storage: 'fs', worker: false },
  { name: 'memory, worker_threads', storage: 'memory', worker: true },
  { name: 'memory, in this thread', storage: 'memory', worker: false },
]

/** No checkpoint is written behind our back between two snapshots (turn/end still checkpoints). */
const QUIET = { checkpoint: { everyEvents: 1_000_000, everyMs: 1_000_000_000 } }

interface Ctx {
  store: Store
  /** A root session open for writing, holding three events; 'kid' was spawned from it. */
  w: Session
  kid: Session
  /** An observer of 'w'. */
  view: SessionView
  options: OpenStoreOptions
}

/** `run` must reject with `code`; the message must contain each of `names`. */
interface Case {
  name: string
  code: ErrorCode
  run: (c: Ctx) => unknown
  names?: string[]
}

async function drain(events: AsyncIterable<SessionEvent>): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  for await (const e of events) out.push(e)
  return out
}

// ---- inputs -----------------------------------------------------------------------------

/** Ids the data model (§2) refuses: 1-128 characters of [A-Za-z0-9_-] and nothing else. */
const BAD_IDS: [string, unknown][] = [
  ['empty', ''],
  ['129 characters', 'x'.repeat(129)],
  ['..', '..'],
  ['.', '.'],
  ['../w', '../w'],
  ['a/b', 'a/b'],
  ['a\\b', 'a\\b'],
  ['/etc/passwd', '/etc/passwd'],
  ['C:\\w', 'C:\\w'],
  ['a:b (NTFS stream)', 'a:b'],
  ['CON.txt', 'CON.txt'],
  ['NUL inside', 'a\0b'],
  ['trailing NUL', 'w\0'],
  ['space inside', 'a b'],
  ['leading space', ' w'],
  ['trailing space', 'w '],
  ['trailing newline', 'w\n'],
  ['tab', 'w\t'],
  ['%2e%2e', '%2e%2e'],
  ['Cyrillic а in "аgent"', '\u0430gent'],
  ['Cyrillic ѡ', '\u0461'],
  ['fullwidth ｗ', '\uff57'],
  ['fullwidth ＡＢ', '\uff21\uff22'],
  ['division slash', 'a\u2215b'],
  ['fraction slash', 'a\u2044b'],
  ['zero-width space', 'w\u200b'],
  ['combining accent', 'e\u0301'],
  ['Kelvin sign K', '\u212a'],
  ['dotted İ', '\u0130'],
  ['ligature ﬁ', '\ufb01'],
  ['ß', 'stra\u00dfe'],
  ['lone surrogate', 'a\ud800'],
  ['emoji', 'a\u{1f600}'],
  ['right-to-left override', 'a\u202eb'],
  ['number', 42],
  ['null', null],
  ['true', true],
  ['object', {}],
  ['array', ['w']],
  ['bigint', 1n],
  ['symbol', Symbol('w')],
  ['function', () => 'w'],
  ['boxed string', new String('w')],
]

const shown = (id: unknown) => (typeof id === 'string' ? JSON.stringify(id.length > 40 ? `${id.slice(0, 40)}…` : id) : undefined)

function cyclic(): unknown {
  const a: Record<string, unknown> = { list: [] }
  ;(a.list as unknown[]).push({ back: a })
  return a
}

function deep(n: number): unknown {
  let d: unknown = 1
  for (let i = 0; i < n; i++) d = [d]
  return d
}

/** Data that is not plain JSON: JSON.stringify would drop, convert or throw on each. */
const NOT_JSON: [string, () => unknown][] = [
  ['a cycle', () => cyclic()],
  [
    'a self-reference',
    () => {
      const o: Record<string, unknown> = {}
      o.o = o
      return o
    },
  ],
  ['BigInt', () => 10n],
  ['BigInt inside', () => ({ n: [1, 2n] })],
  ['a function', () => () => 1],
  [
    'a method',
    () => ({
      f() {
        return 1
      },
    }),
  ],
  ['toJSON', () => ({ toJSON: () => 'x' })],
  ['undefined in an object', () => ({ u: undefined })],
  ['undefined in an array', () => [1, undefined]],
  ['NaN', () => NaN],
  ['NaN inside', () => ({ x: [NaN] })],
  ['Infinity', () => Infinity],
  ['-Infinity', () => ({ x: -Infinity })],
  ['a symbol', () => Symbol('s')],
  ['a symbol key', () => ({ [Symbol('k')]: 1 })],
  ['Date', () => new Date(0)],
  ['Date inside', () => [{ d: new Date(0) }]],
  ['Map', () => new Map([[1, 2]])],
  ['Set', () => new Set([1])],
  ['WeakMap', () => new WeakMap()],
  ['Uint8Array', () => new Uint8Array(2)],
  ['Float64Array', () => new Float64Array(1)],
  ['ArrayBuffer', () => new ArrayBuffer(4)],
  ['DataView', () => new DataView(new ArrayBuffer(1))],
  ['Buffer', () => Buffer.from('x')],
  [
    'a class instance',
    () =>
      new (class Point {
        x = 1
      })(),
  ],
  ['an inherited object', () => Object.create({ a: 1 })],
  // biome-ignore lint/suspicious/noSparseArray: a hole is the bad input under test
  ['a sparse array', () => [1, , 3]],
  ['new Array(3)', () => new Array(3)],
  ['an array subclass', () => new (class L extends Array {})()],
  ['RegExp', () => /x/],
  ['Error', () => new Error('e')],
  ['Promise', () => Promise.resolve(1)],
  ['boxed number', () => new Number(1)],
  ['boxed boolean', () => new Boolean(false)],
  [
    'a getter that throws',
    () => ({
      get x(): number {
        throw new RangeError('getter')
      },
    }),
  ],
  [
    'a getter that changes its answer',
    () => {
      let n = 0
      return {
        get x() {
          return n++ === 0 ? 1 : 1n
        },
      }
    },
  ],
  [
    'a proxy whose traps throw',
    () =>
      new Proxy(
        {},
        {
          ownKeys() {
            throw new TypeError('trap')
          },
        },
      ),
  ],
  ['nesting deeper than 512', () => deep(600)],
]

const ONE_MIB = 1024 * 1024

function cases(): Case[] {
  const w = ['"w"']
  const out: Case[] = []
  const add = (name: string, code: ErrorCode, run: Case['run'], names?: string[]) => out.push({ name, code, run, names })

  for (const [label, id] of BAD_IDS) {
    const names = shown(id) === undefined ? ['session id'] : [shown(id)!]
    add(`openSession(${label})`, 'INVALID_ARGUMENT', (c) => c.store.openSession(id as string), names)
    add(`observe(${label})`, 'INVALID_ARGUMENT', (c) => c.store.observe(id as string), names)
    add(`deleteSession(${label})`, 'INVALID_ARGUMENT', (c) => c.store.deleteSession(id as string), names)
    add(`createSession({ id: ${label} })`, 'INVALID_ARGUMENT', (c) => c.store.createSession({ id: id as string }))
  }
  for (const [label, id] of BAD_IDS.filter((_, i) => i % 3 === 0)) {
    add(`spawn({ id: ${label} })`, 'INVALID_ARGUMENT', (c) => c.w.spawn({ mode: 'one-shot', id: id as string }))
    add(`fork({ id: ${label} })`, 'INVALID_ARGUMENT', (c) => c.w.fork({ id: id as string }))
    add(`recordExternal({ childId: ${label} })`, 'INVALID_ARGUMENT', (c) => c.w.recordExternal({ childId: id as string }))
    add(`listSessions({ after: ${label} })`, 'INVALID_ARGUMENT', (c) => c.store.listSessions({ after: id as string }))
  }
  add('openSession() without an id', 'INVALID_ARGUMENT', (c) => (c.store.openSession as () => unknown)())
  add('openSession of a missing session', 'SESSION_NOT_FOUND', (c) => c.store.openSession('ghost'), ['"ghost"'])
  add('observe of a missing session', 'SESSION_NOT_FOUND', (c) => c.store.observe('ghost'), ['"ghost"'])
  add('openSession of a session open for writing', 'SESSION_LOCKED', (c) => c.store.openSession('w'), w)
  add('createSession of an id open for writing', 'SESSION_EXISTS', (c) => c.store.createSession({ id: 'w' }), w)
  add('createSession of an existing id', 'SESSION_EXISTS', (c) => c.store.createSession({ id: 'idle' }), ['"idle"'])
  add('deleteSession of a session open for writing', 'SESSION_LOCKED', (c) => c.store.deleteSession('w'), w)

  // Event data that is not plain JSON, alone and as one event of a batch (all or nothing).
  for (const [label, make] of NOT_JSON) {
    add(`append data: ${label}`, 'INVALID_ARGUMENT', (c) => c.w.append({ type: 'app/x', data: make() as never }), w)
    add(`append batch with data: ${label}`, 'INVALID_ARGUMENT', (c) => c.w.append([{ type: 'app/ok' }, { type: 'app/x', data: make() as never }]), w)
  }
  for (const [label, make] of NOT_JSON.filter((_, i) => i % 4 === 0)) {
    add(`spawn events with data: ${label}`, 'INVALID_ARGUMENT', (c) => c.w.spawn({ mode: 'one-shot', events: [{ type: 'app/x', data: make() as never }] }), w)
  }
  // Event shapes.
  const badEvents: [string, unknown][] = [
    ['undefined', undefined],
    ['null', null],
    ['a string', 'turn/start'],
    ['a number', 7],
    ['a Date', new Date()],
    [
      'a class instance',
      new (class E {
        type = 't'
      })(),
    ],
    ['no type', { data: 1 }],
    ['empty type', { type: '' }],
    ['type of 257 characters', { type: 'x'.repeat(257) }],
    ['numeric type', { type: 7 }],
    ['type null', { type: null }],
    ['type a String object', { type: new String('t') }],
    ['time -1', { type: 't', time: -1 }],
    ['time NaN', { type: 't', time: NaN }],
    ['time Infinity', { type: 't', time: Infinity }],
    ['time a string', { type: 't', time: '1' }],
    ['time a BigInt', { type: 't', time: 1n }],
    ['time a Date', { type: 't', time: new Date() }],
    ['an unknown field', { type: 't', seq: 0 }],
    ['an own __proto__ field', JSON.parse('{"type":"t","__proto__":{"x":1}}')],
    [
      'a type getter that throws',
      {
        get type(): string {
          throw new Error('no')
        },
      },
    ],
  ]
  for (const [label, input] of badEvents) add(`append an event that is ${label}`, 'INVALID_ARGUMENT', (c) => c.w.append(input as never), w)
  add('append()', 'INVALID_ARGUMENT', (c) => (c.w.append as () => unknown)(), w)
  add('append([])', 'INVALID_ARGUMENT', (c) => c.w.append([]), w)
  add('append of a batch whose last event is bad', 'INVALID_ARGUMENT', (c) => c.w.append([{ type: 'a' }, { type: 'b' }, { type: '' }]), w)

  // Oversize events: 1 MiB of UTF-8 by default, counted in bytes.
  add('append 1 MiB of data', 'EVENT_TOO_LARGE', (c) => c.w.append({ type: 'app/x', data: 'x'.repeat(ONE_MIB) }), w)
  add('append 600 Ki of 2-byte characters', 'EVENT_TOO_LARGE', (c) => c.w.append({ type: 'app/x', data: '\u00e9'.repeat(600 * 1024) }), w)
  add('append 300 Ki of 4-byte characters', 'EVENT_TOO_LARGE', (c) => c.w.append({ type: 'app/x', data: '\u{1f600}'.repeat(300 * 1024) }), w)
  add('append a batch with one oversize event', 'EVENT_TOO_LARGE', (c) => c.w.append([{ type: 'a' }, { type: 'b', data: { big: 'x'.repeat(ONE_MIB) } }]), w)
  add('spawn with an oversize initial event', 'EVENT_TOO_LARGE', (c) => c.w.spawn({ mode: 'one-shot', events: [{ type: 'a', data: 'x'.repeat(ONE_MIB) }] }), w)

  // Append options and expectedSeq (the log of 'w' holds 4 events: 3, then spawn's catalog fact).
  add('expectedSeq in the past', 'SEQ_CONFLICT', (c) => c.w.append({ type: 't' }, { expectedSeq: 0 }), [...w, 'seq 0'])
  add('expectedSeq one behind', 'SEQ_CONFLICT', (c) => c.w.append({ type: 't' }, { expectedSeq: 3 }), [...w, 'seq 3'])
  add('expectedSeq one ahead', 'SEQ_CONFLICT', (c) => c.w.append({ type: 't' }, { expectedSeq: 5 }), [...w, 'seq 5'])
  add('expectedSeq far in the future', 'SEQ_CONFLICT', (c) => c.w.append({ type: 't' }, { expectedSeq: 1_000_000 }), [...w, 'seq 1000000'])
  add('expectedSeq in the past, on a batch', 'SEQ_CONFLICT', (c) => c.w.append([{ type: 't' }, { type: 'u' }], { expectedSeq: 2 }), w)
  for (const [label, v] of [
    ['-1', -1],
    ['1.5', 1.5],
    ['"4"', '4'],
    ['NaN', NaN],
    ['Infinity', Infinity],
    ['null', null],
    ['4n', 4n],
    ['2**53', 2 ** 53],
    ['a function', () => 4],
  ] as const) {
    add(`expectedSeq ${label}`, 'INVALID_ARGUMENT', (c) => c.w.append({ type: 't' }, { expectedSeq: v as number }), w)
  }
  for (const [label, o] of [
    ['a string', 'x'],
    ['null', null],
    ['an array', []],
    ['a typo (expectSeq)', { expectSeq: 4 }],
    ['an inherited expectedSeq', Object.create({ expectedSeq: 4 })],
    [
      'a class instance',
      new (class O {
        expectedSeq = 4
      })(),
    ],
  ] as const) {
    add(`append options ${label}`, 'INVALID_ARGUMENT', (c) => c.w.append({ type: 't' }, o as never), w)
  }

  // createSession and listSessions options.
  for (const [label, o] of [
    ['null', null],
    ['a string', 'w2'],
    ['an array', []],
    ['an unknown field', { id: 'n1', bogus: 1 }],
    ['an own __proto__ field', JSON.parse('{"__proto__":{"id":"n2"}}')],
    ['cwd a number', { id: 'n3', cwd: 5 }],
    ['cwd of 4097 characters', { id: 'n4', cwd: 'x'.repeat(4097) }],
    ['cwd a function', { id: 'n5', cwd: () => '/' }],
    ['cwd a symbol', { id: 'n6', cwd: Symbol('/') }],
    [
      'a class instance',
      new (class O {
        id = 'n7'
      })(),
    ],
  ] as const)
    add(`createSession with ${label}`, 'INVALID_ARGUMENT', (c) => c.store.createSession(o as never))
  for (const [label, o] of [
    ['a string', 'x'],
    ['null', null],
    ['an array', []],
    ['limit 0', { limit: 0 }],
    ['limit -1', { limit: -1 }],
    ['limit 1.5', { limit: 1.5 }],
    ['limit 10^9', { limit: 1e9 }],
    ['limit "5"', { limit: '5' }],
    ['limit a BigInt', { limit: 5n }],
    ['an unknown field', { afterId: 'a' }],
  ] as const)
    add(`listSessions with ${label}`, 'INVALID_ARGUMENT', (c) => c.store.listSessions(o as never))

  // deleteSession options.
  for (const [label, o] of [
    ['null', null],
    ['a string', 'tree'],
    ['tree "yes"', { tree: 'yes' }],
    ['tree 1', { tree: 1 }],
    ['an unknown field', { recursive: true }],
  ] as const)
    add(`deleteSession("idle") with ${label}`, 'INVALID_ARGUMENT', (c) => c.store.deleteSession('idle', o as never))

  // events({ from, to }) ranges.
  for (const [label, o] of [
    ['from -1', { from: -1 }],
    ['from 1.5', { from: 1.5 }],
    ['from "0"', { from: '0' }],
    ['from NaN', { from: NaN }],
    ['from 2**53', { from: 2 ** 53 }],
    ['from a BigInt', { from: 0n }],
    ['to -1', { to: -1 }],
    ['to Infinity', { to: Infinity }],
    ['to null', { to: null }],
    ['a string', 'all'],
    ['null', null],
    ['an array', []],
    ['a signal that is not an AbortSignal', { signal: { aborted: false } }],
    ['an unknown field', { form: 1 }],
  ] as const) {
    add(`events with ${label}`, 'INVALID_ARGUMENT', (c) => drain(c.w.events(o as never)), w)
    add(`events of an observer with ${label}`, 'INVALID_ARGUMENT', (c) => drain(c.view.events(o as never)), w)
  }
  add(
    'events with an aborted signal',
    'CANCELLED',
    (c) => {
      const a = new AbortController()
      a.abort()
      return drain(c.w.events({ signal: a.signal }))
    },
    w,
  )

  // listChildren options.
  for (const [label, o] of [
    ['a string', 'x'],
    ['null', null],
    ['recursive "yes"', { recursive: 'yes' }],
    ['recursive 1', { recursive: 1 }],
    ['a signal that is not an AbortSignal', { signal: {} }],
    ['an unknown field', { recursve: true }],
  ] as const)
    add(`listChildren with ${label}`, 'INVALID_ARGUMENT', (c) => c.w.listChildren(o as never), w)
  add(
    'listChildren with an aborted signal',
    'CANCELLED',
    (c) => {
      const a = new AbortController()
      a.abort()
      return c.w.listChildren({ signal: a.signal })
    },
    w,
  )

  // spawn: modes, labels, events, ids.
  for (const [label, o] of [
    ['no options', undefined],
    ['null', null],
    ['a string', 'one-shot'],
    ['no mode', {}],
    ['mode "sometimes"', { mode: 'sometimes' }],
    ['mode "external"', { mode: 'external' }],
    ['mode "unknown"', { mode: 'unknown' }],
    ['mode "One-Shot"', { mode: 'One-Shot' }],
    ['mode 1', { mode: 1 }],
    ['continuable without a label', { mode: 'continuable' }],
    ['an empty label', { mode: 'one-shot', label: '' }],
    ['a label of 257 characters', { mode: 'continuable', label: 'x'.repeat(257) }],
    ['a numeric label', { mode: 'continuable', label: 5 }],
    ['a null label', { mode: 'continuable', label: null }],
    ['a function label', { mode: 'one-shot', label: () => 'x' }],
    ['a symbol label', { mode: 'one-shot', label: Symbol('x') }],
    ['events a string', { mode: 'one-shot', events: 'turn/start' }],
    ['events holding a bad event', { mode: 'one-shot', events: [{ type: 7 }] }],
    ['an unknown field', { mode: 'one-shot', bogus: 1 }],
    [
      'a class instance',
      new (class O {
        mode = 'one-shot'
      })(),
    ],
  ] as const)
    add(`spawn with ${label}`, 'INVALID_ARGUMENT', (c) => c.w.spawn(o as never), w)
  add('spawn with the id of a session open for writing', 'SESSION_LOCKED', (c) => c.w.spawn({ mode: 'one-shot', id: 'w' }), w)
  add('spawn with the id of an existing session', 'SESSION_EXISTS', (c) => c.w.spawn({ mode: 'one-shot', id: 'idle' }), ['"idle"'])

  // recordExternal.
  for (const [label, o] of [
    ['no options', undefined],
    ['null', null],
    ['no childId', {}],
    ['an empty label', { childId: 'ci', label: '' }],
    ['a label of 257 characters', { childId: 'ci', label: 'x'.repeat(257) }],
    ['a numeric label', { childId: 'ci', label: 1 }],
    ['a symbol label', { childId: 'ci', label: Symbol('l') }],
    ['an unknown field', { childId: 'ci', mode: 'external' }],
  ] as const)
    add(`recordExternal with ${label}`, 'INVALID_ARGUMENT', (c) => c.w.recordExternal(o as never), w)

  // fork({ at }): 0..length, integers only.
  for (const [label, o] of [
    ['at -1', { at: -1 }],
    ['at one past the end', { at: 5 }],
    ['at far past the end', { at: 1e9 }],
    ['at 1.5', { at: 1.5 }],
    ['at "1"', { at: '1' }],
    ['at NaN', { at: NaN }],
    ['at Infinity', { at: Infinity }],
    ['at a BigInt', { at: 1n }],
    ['at a function', { at: () => 1 }],
    ['a string', 'x'],
    ['null', null],
    ['an unknown field', { at: 1, from: 0 }],
    [
      'a class instance',
      new (class O {
        at = 1
      })(),
    ],
  ] as const)
    add(`fork with ${label}`, 'INVALID_ARGUMENT', (c) => c.w.fork(o as never), w)
  add('fork with the id of a session open for writing', 'SESSION_LOCKED', (c) => c.w.fork({ id: 'kid' }), ['"kid"'])
  add('fork with the id of an existing session', 'SESSION_EXISTS', (c) => c.w.fork({ id: 'idle' }), ['"idle"'])

  // A view is read-only: it has no append, and the worker refuses writes through its handle.
  add('append through an observer', 'CLOSED', (c) => Session.prototype.append.call(c.view as Session, { type: 't' }), w)

  // openStore options (on the same dir: nothing may be created or changed there).
  for (const [label, o] of [
    ['storage "floppy"', { storage: 'floppy' }],
    ['worker "yes"', { worker: 'yes' }],
    ['durability "eventual"', { durability: 'eventual' }],
    ['an empty dir', { dir: '' }],
    ['a numeric dir', { dir: 5 }],
    ['a dir with NUL', { dir: 'a\0b' }],
    ['an unknown option', { nope: 1 }],
    ['checkpoint a string', { checkpoint: 'often' }],
    ['checkpoint with an unknown field', { checkpoint: { every: 1 } }],
    ['checkpoint.everyMs a function', { checkpoint: { everyMs: () => 1 } }],
    ['maxEventBytes 0', { maxEventBytes: 0 }],
    ['maxEventBytes "big"', { maxEventBytes: 'big' }],
    ['maxEventBytes NaN', { maxEventBytes: NaN }],
    ['projections a string', { projections: 'x' }],
    ['workerUrl a number', { workerUrl: 5 }],
    // An option of another backend says where that one keeps its data: never ignored.
    ['url (a PostgreSQL store) with this storage', { url: 'postgres://u:secret@127.0.0.1:1/db' }],
    ['schema (a PostgreSQL store) with this storage', { schema: 'app' }],
    ["storage indexeddb with this store's dir", { storage: 'indexeddb' }],
  ] as const)
    add(`openStore with ${label}`, 'INVALID_ARGUMENT', (c) => openStore({ ...c.options, ...(o as object) }))
  for (const [label, o] of [
    ['checkpoint.everyEvents 0', { checkpoint: { everyEvents: 0 } }],
    ['checkpoint.everyMs -1', { checkpoint: { everyMs: -1 } }],
  ] as const) {
    add(`openStore with ${label}`, 'INVALID_ARGUMENT', (c) => openStore({ ...c.options, ...(o as object) }))
  }
  add('openStore with options null', 'INVALID_ARGUMENT', () => openStore(null as never))
  add('openStore with options a string', 'INVALID_ARGUMENT', () => openStore('fs' as never))
  return out
}

// ---- snapshots ---------------------------------------------------------------------------

/** Every entry under `dir`: directories by name, files by name and SHA-256 of their bytes. */
async function fsSnapshot(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  const walk = async (rel: string) => {
    for (const d of await readdir(join(dir, rel), { withFileTypes: true })) {
      const p = rel ? `${rel}/${d.name}` : d.name
      if (d.isDirectory()) {
        out[`${p}/`] = 'dir'
        await walk(p)
      } else
        out[p] = createHash('sha256')
          .update(await readFile(join(dir, p)))
          .digest('hex')
    }
  }
  await walk('')
  return out
}

/** Every session as the store reports it: header, every event, projection values. */
async function apiSnapshot(store: Store): Promise<unknown> {
  const out: Record<string, unknown> = {}
  for (const header of await store.listSessions({ limit: 1000 })) {
    const view = await store.observe(header.id)
    try {
      out[header.id] = { header, events: await drain(view.events()), projections: view.projections.snapshot() }
    } finally {
      await view.close()
    }
  }
  return out
}

// ---- the suite ---------------------------------------------------------------------------

const CASES = cases()
const PROTO_KEYS = Object.getOwnPropertyNames(Object.prototype).sort()

for (const mode of MODES) {
  describe(`bad input through the client: ${mode.name}`, () => {
    let root: string
    let dir: string
    const ctx = {} as Ctx
    let original: SessionEvent[]

    const snapshot = async () => (mode.storage === 'fs' ? fsSnapshot(dir) : apiSnapshot(ctx.store))

    beforeAll(async () => {
      root = await mkdtemp(join(tmpdir(), 'sessionfold-bad-input-'))
      dir = join(root, 'store')
      ctx.options = { storage: mode.storage, dir, worker: mode.worker, ...QUIET }
      ctx.store = await openStore(ctx.options)
      const idle = await ctx.store.createSession({ id: 'idle' })
      await idle.append({ type: 'turn/start', time: 5 })
      await idle.close()
      const w = await ctx.store.createSession({ id: 'w', cwd: '/work' })
      await w.append([
        { type: 'turn/start', time: 10 },
        { type: 'app/x', time: 11, data: { k: [1, 'two', null] } },
        { type: 'turn/end', time: 12 },
      ])
      await w.close() // its checkpoint is written, not pending
      ctx.w = await ctx.store.openSession('w')
      ctx.kid = await ctx.w.spawn({ mode: 'continuable', label: 'helper', id: 'kid' })
      ctx.view = await ctx.store.observe('w')
      original = await drain(ctx.w.events())
      expect(original).toHaveLength(4)
      // The session index (§14) catches up with these writes in the background: let it, so no
      // write of it lands between a case's two snapshots.
      const list = ctx.store.sessions({ roots: false })
      await new Promise<void>((done) => list.subscribe(() => done()))
      list.close()
    })

    afterAll(async () => {
      await ctx.store?.close()
      if (root) await rm(root, { recursive: true, force: true })
    })

    for (const c of CASES) {
      it(`${c.name}: ${c.code}`, async () => {
        const before = await snapshot()
        let err: unknown
        try {
          await c.run(ctx)
        } catch (e) {
          err = e
        }
        if (!isSessionfoldError(err)) throw new Error(`expected SessionfoldError ${c.code}, got ${err === undefined ? 'success' : String(err)}`)
        expect(err.code, err.message).toBe(c.code)
        expect(ERROR_CODES).toContain(err.code)
        for (const n of c.names ?? []) expect(err.message).toContain(n)
        expect(await snapshot()).toEqual(before)
      })
    }

    it('after all of that: the log of "w" is as it was, appends continue at seq 4, nothing else was created', async () => {
      expect(await drain(ctx.w.events())).toEqual(original)
      expect(await ctx.w.append({ type: 'app/after' }, { expectedSeq: 4 })).toEqual({ firstSeq: 4, lastSeq: 4 })
      expect((await ctx.store.listSessions()).map((h) => h.id)).toEqual(['idle', 'kid', 'w'])
      expect(ctx.w.projections.get('subagentCatalog')).toEqual([expect.objectContaining({ id: 'kid', mode: 'continuable', label: 'helper' })])
      expect(ctx.w.projections.snapshot().faults).toEqual({})
    })

    it('keeps __proto__, constructor and prototype keys as plain own data, identical on reading back, polluting nothing', async () => {
      const json =
        '{"__proto__":{"polluted":"yes","admin":true},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":1},' +
        '"list":[{"__proto__":null},{"constructor":"c"}],"nested":{"__proto__":{"__proto__":{"deep":1}}}}'
      const data = JSON.parse(json) as Record<string, unknown>
      expect(Object.keys(data)).toContain('__proto__') // an own key, as JSON.parse makes it
      const s = await ctx.store.createSession({ id: 'proto' })
      await s.append([
        { type: 'app/proto', data: data as never, time: 1 },
        { type: 'turn/start', time: 2, data: data as never },
      ])
      const check = (e: SessionEvent) => {
        const got = e.data as Record<string, unknown>
        expect(JSON.stringify(got)).toBe(json)
        expect(Object.getPrototypeOf(got)).toBe(Object.prototype)
        expect(Object.keys(got)).toEqual(['__proto__', 'constructor', 'prototype', 'list', 'nested'])
        expect(Object.getOwnPropertyDescriptor(got, '__proto__')?.value).toEqual({ polluted: 'yes', admin: true })
        expect((got as { polluted?: unknown }).polluted).toBeUndefined()
        expect(got.constructor).toEqual({ prototype: { polluted: 'yes' } })
      }
      for (const e of await drain(s.events())) check(e)
      await s.close()
      // A cold read in a fresh store: the same.
      if (mode.storage === 'fs') {
        const again = await openStore(ctx.options)
        try {
          const v = await again.observe('proto')
          for (const e of await drain(v.events())) check(e)
          expect(v.projections.get('subagentTiming')).toEqual({ turns: 1, settledMs: 0, runningSince: 2 })
        } finally {
          await again.close()
        }
      }
      expect(({} as Record<string, unknown>).polluted).toBeUndefined()
      expect(({} as Record<string, unknown>).admin).toBeUndefined()
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(PROTO_KEYS)
      expect(Object.getPrototypeOf(Object.prototype)).toBeNull()
      await ctx.store.deleteSession('proto')
    })

    it('stores -0 as 0 (JSON has one zero) and lone surrogates as they are', async () => {
      const s = await ctx.store.createSession({ id: 'zero' })
      await s.append({ type: 'app/z', data: { z: -0, list: [-0], s: 'a\ud800b' } })
      const [e] = await drain(s.events())
      expect(Object.is((e!.data as { z: number }).z, 0)).toBe(true)
      expect((e!.data as { s: string }).s).toBe('a\ud800b')
      await s.close()
      await ctx.store.deleteSession('zero')
    })
  })
}
