// Contract: §2 data model, §6 errors — ids, plain JSON, event encoding and size, headers, witnesses, SessionfoldError (docs/CONTRACT.md)
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { ERROR_CODES, SessionfoldError, isSessionfoldError } from '../../src/core/errors'
import { sameWitness, witnessOf, type SessionHeader } from '../../src/core/model'
import { sessionEventSchema, sessionHeaderSchema } from '../../src/core/schemas'
import { assertPlainJson, assertSessionId, encodeEventInput, utf8Length } from '../../src/core/validate'
import { BAD_IDS } from '../../src/testing/helpers'
import { expectCode, rootHeader } from '../support/helpers'

describe('session ids', () => {
  it('accepts 1-128 characters of [A-Za-z0-9_-]', () => {
    for (const id of ['a', 'Z', '0', '_', '-', 'agent-1_X', 'x'.repeat(128)]) expect(() => assertSessionId(id)).not.toThrow()
  })
  it('rejects everything else with INVALID_ARGUMENT', async () => {
    for (const id of BAD_IDS) await expectCode(() => assertSessionId(id), 'INVALID_ARGUMENT')
  })
})

describe('plain JSON', () => {
  it('accepts nested plain data, null-prototype objects and keys like __proto__', () => {
    const data = JSON.parse('{"a":[1,"two",null,true,{"b":-0.5}],"__proto__":{"x":1},"constructor":{"prototype":1}}')
    expect(() => assertPlainJson(data, 'data')).not.toThrow()
    expect(() => assertPlainJson(Object.assign(Object.create(null), { k: 1 }), 'data')).not.toThrow()
  })
  it('rejects what JSON.stringify would silently change, naming where', async () => {
    const cyclic: { self?: unknown; list: unknown[] } = { list: [] }
    cyclic.list.push({ back: cyclic })
    // biome-ignore lint/suspicious/noSparseArray: a hole is the bad input under test
    const holey = [1, , 3]
    const cases: [unknown, string][] = [
      [() => 1, 'function at the top'],
      [{ a: undefined }, 'undefined at .a'],
      [NaN, 'NaN'],
      [{ x: [Infinity] }, 'Infinity at .x[0]'],
      [-Infinity, '-Infinity'],
      [10n, '10n'],
      [Symbol('s'), 'symbol'],
      [{ d: new Date(0) }, 'Date at .d'],
      [new Map(), 'Map'],
      [new Set(), 'Set'],
      [new Uint8Array(1), 'Uint8Array'],
      [new ArrayBuffer(1), 'ArrayBuffer'],
      [holey, 'a hole at [1]'],
      [cyclic, 'a cycle at .list[0].back'],
      [{ [Symbol('k')]: 1 }, 'a symbol key'],
      [
        new (class Point {
          x = 1
        })(),
        'Point',
      ],
      [Object.create({ inherited: 1 }), 'Object'],
      [/re/, 'RegExp'],
      [new Error('e'), 'Error'],
    ]
    for (const [value, where] of cases) {
      const err = await expectCode(() => assertPlainJson(value, 'event data'), 'INVALID_ARGUMENT')
      expect(err.message).toContain(where)
    }
    let deep: unknown = 1
    for (let i = 0; i < 600; i++) deep = [deep]
    await expectCode(() => assertPlainJson(deep, 'data'), 'INVALID_ARGUMENT')
  })
  it('keeps __proto__ and constructor keys as data and pollutes no prototype', () => {
    const data = JSON.parse('{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}')
    const { json, event } = encodeEventInput({ type: 't', data, time: 1 }, 0, 's')
    expect(json).toBe('{"seq":0,"type":"t","time":1,"data":{"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}}}}')
    const back = JSON.parse(json) as { data: object }
    expect(Object.getPrototypeOf(back.data)).toBe(Object.prototype)
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(event.data).toEqual(data)
    expect(event.data).not.toBe(data) // a parsed copy: the caller cannot change what is stored or folded
  })
})

describe('events', () => {
  it('encodes seq, type, time and data in that order; data defaults to null and time to now', () => {
    const before = Date.now()
    const { event, json } = encodeEventInput({ data: { x: 1 }, type: 'turn/start' }, 7, 's')
    expect(Object.keys(event)).toEqual(['seq', 'type', 'time', 'data'])
    expect(event.time).toBeGreaterThanOrEqual(before)
    expect(json).toBe(JSON.stringify(event))
    expect(encodeEventInput({ type: 'x', time: 5 }, 0, 's').event).toEqual({ seq: 0, type: 'x', time: 5, data: null })
  })
  it('rejects bad shapes with INVALID_ARGUMENT naming the session and seq', async () => {
    for (const input of [
      null,
      'e',
      [],
      { type: '' },
      { type: 1 },
      { type: 'x'.repeat(257) },
      { type: 't', time: -1 },
      { type: 't', time: NaN },
      { type: 't', time: '1' },
      { type: 't', extra: 1 },
      { data: 1 },
    ]) {
      const err = await expectCode(() => encodeEventInput(input, 3, 'sess'), 'INVALID_ARGUMENT')
      expect(err.message).toContain('session "sess" at seq 3')
      expect((err as SessionfoldError).sessionId).toBe('sess')
      expect((err as SessionfoldError).seq).toBe(3)
    }
  })
  it('limits the encoded event in UTF-8 bytes, 1 MiB by default, configurable', async () => {
    const overhead = JSON.stringify({ seq: 0, type: 't', time: 1, data: '' }).length
    const exact = 'x'.repeat(1024 * 1024 - overhead)
    expect(() => encodeEventInput({ type: 't', time: 1, data: exact }, 0, 's')).not.toThrow()
    const err = await expectCode(() => encodeEventInput({ type: 't', time: 1, data: `${exact}x` }, 0, 's'), 'EVENT_TOO_LARGE')
    expect(err.message).toContain('session "s" at seq 0')
    // 'é' is 2 bytes: the limit counts bytes, not characters.
    await expectCode(() => encodeEventInput({ type: 't', time: 1, data: 'é'.repeat(60) }, 0, 's', { maxBytes: 100 }), 'EVENT_TOO_LARGE')
    expect(() => encodeEventInput({ type: 't', time: 1, data: 'e'.repeat(60) }, 0, 's', { maxBytes: 100 })).not.toThrow()
  })
  it('counts UTF-8 bytes exactly', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), (s) => {
        expect(utf8Length(s)).toBe(Buffer.byteLength(s))
      }),
      { numRuns: 3000 },
    )
    expect(utf8Length('\ud800')).toBe(3)
    expect(utf8Length('😀')).toBe(4)
  })
})

describe('headers and witnesses', () => {
  const sub: SessionHeader = { version: 1, id: 'c', createdAt: 2, parentSession: 'p', seedLength: 0, delegationDepth: 1, origin: 'subagent' }
  const fork: SessionHeader = { version: 1, id: 'f', createdAt: 3, cwd: '/w', seedLength: 4, delegationDepth: 0, origin: 'fork', forkedFrom: 'p' }
  it('accepts headers of each origin and rejects inconsistent ones', () => {
    for (const h of [rootHeader('r'), sub, fork]) expect(sessionHeaderSchema.parse(h)).toEqual(h)
    for (const bad of [
      { ...sub, parentSession: undefined },
      { ...rootHeader('r'), parentSession: 'p' },
      { ...fork, forkedFrom: undefined },
      { ...rootHeader('r'), seedLength: 2 },
      { ...rootHeader('r'), delegationDepth: 1 },
      { ...rootHeader('r'), createdAt: -1 },
      { ...rootHeader('r'), id: '../x' },
      { ...rootHeader('r'), version: 2 },
      { ...rootHeader('r'), extra: true },
    ])
      expect(sessionHeaderSchema.safeParse(bad).success, JSON.stringify(bad)).toBe(false)
  })
  it('a witness matches its header and no other life of the same id', () => {
    expect(witnessOf(sub)).toEqual({ version: 1, id: 'c', createdAt: 2, parentSession: 'p', seedLength: 0, delegationDepth: 1 })
    expect(sameWitness(witnessOf(fork), fork)).toBe(true)
    expect(sameWitness(witnessOf(fork), { ...fork, createdAt: 4 })).toBe(false)
    expect(sameWitness(witnessOf(sub), { ...sub, parentSession: 'q' })).toBe(false)
    expect(sameWitness(witnessOf(fork), { ...fork, cwd: undefined })).toBe(false)
  })
  it('checks stored events strictly', () => {
    expect(sessionEventSchema.safeParse({ seq: 0, type: 't', time: 1, data: { a: [1] } }).success).toBe(true)
    expect(sessionEventSchema.safeParse({ seq: -1, type: 't', time: 1, data: null }).success).toBe(false)
    expect(sessionEventSchema.safeParse({ seq: 0, type: 't', time: 1, data: null, x: 1 }).success).toBe(false)
  })
})

describe('SessionfoldError', () => {
  it('carries a stable code, the session and the seq', () => {
    const err = new SessionfoldError('SEQ_CONFLICT', 'append to session "s" at seq 4 conflicts', { sessionId: 's', seq: 4 })
    expect(err).toBeInstanceOf(Error)
    expect(err.name).toBe('SessionfoldError')
    expect(isSessionfoldError(err, 'SEQ_CONFLICT')).toBe(true)
    expect(isSessionfoldError(err, 'CLOSED')).toBe(false)
    expect(isSessionfoldError(new Error('x'))).toBe(false)
    expect(ERROR_CODES).toEqual([
      'INVALID_ARGUMENT',
      'SESSION_NOT_FOUND',
      'SESSION_EXISTS',
      'SESSION_LOCKED',
      'SEQ_CONFLICT',
      'EVENT_TOO_LARGE',
      'CORRUPT_LOG',
      'STORAGE_QUOTA_EXCEEDED',
      'STORAGE_UNAVAILABLE',
      'CANCELLED',
      'WORKER_TERMINATED',
      'CLOSED',
      'PROJECTIONS_UNAVAILABLE',
      'KEY_REJECTED',
    ])
  })
})
