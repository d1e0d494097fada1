// The record codec below the engine: a StorageAdapter around any other, which stores what the
// engine writes as sealed envelopes (compressed, and encrypted when the store has a key) and opens
// them on the way up. Every adapter gets it the same way (fs, IndexedDB, PostgreSQL, memory).
//
// Events: an append's events are cut into blocks (at most BLOCK_EVENTS events, BLOCK_BYTES of
// JSON); a block is one envelope, stored as the record of its first seq, and each later seq of the
// block gets a small record naming that first seq, so lengths, seqs, the feed and the inner
// adapter's own rules stay as they are. Those records have type '' (no app event can have it);
// a block's record holds the envelope (base64) in `data` and its event count in `time`.
// Headers keep their id, createdAt and seedLength readable (the adapter lists and checks by
// them); the rest is sealed. Checkpoint and history rows, meta records and the engine's records
// are the key-value records' (sealed-records.ts), composed over the sealed log once (src/storage/records).
import { SessionfoldError, isSessionfoldError, where } from '../../core/errors'
import { safeParse, sessionHeaderSchema } from '../../core/schemas'
import { describe, encodeEvent } from '../../core/validate'
import type { SessionEvent, SessionHeader, SessionId } from '../../core/model'
import type { EncodedEvent } from '../../core/validate'
import { READ_PAGE, type LogStore, type ReadRange, type SessionInfo, type StorageAdapter } from '../types'
import { createSealed, openSessions } from './sealed-groups'
import { composeStorage, recordsOf } from '../records'
import { fromBase64, toBase64 } from './base64'
import { CODEC_META_KEY, type EncryptionKey, type Keyring } from './keyring'
import { resealSession, type ResealReport } from './reseal'
import { checkSealedValue, sealedRecords } from './sealed-records'
import { Unreadable, type EnvelopeCodec } from './seal'
import { isBlockText, isPointer, pointersTo, record, skipPointers, utf8 } from './block-records'

/** The id of warmUp's envelopes (never stored). */
const WARM_UP_ID = 'sessionfold-warm-up'

/** Events per block, and JSON bytes per block: a read of one event opens at most one block. */
export const BLOCK_EVENTS = 256
export const BLOCK_BYTES = 256 * 1024

/** A stored header whose fields but its id, createdAt and seedLength are sealed. */
export interface SealedHeader extends SessionHeader {
  sealed: string
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

export interface SealedStorage extends StorageAdapter {
  /**
   * A rotation's first step: the key record flipped to `newKey` (see Keyring.rotate); resolves
   * with the data key generation now current. Then resealSession for every session, then
   * dropOldKeys.
   */
  rotateKey(newKey: EncryptionKey): Promise<number>
  /** Re-encrypts session `id` under the current data key (reseal.ts; hold its writer lock); undefined when there is no such session. */
  resealSession(id: SessionId): Promise<ResealReport | undefined>
  /** Drops every data key but `gen` from the key record (see Keyring.dropOldKeys), once every session was resealed. */
  dropOldKeys(gen: number): Promise<void>
  /** Reads the key record again when it changed: KEY_REJECTED when this store's key no longer opens it. */
  refreshKeys(): Promise<void>
  /** KEY_REJECTED unless `key` (or no key) is what this store was opened with. */
  checkKey(key: EncryptionKey | undefined): Promise<void>
  /**
   * Runs the read path of a cold open once (a header and a row sealed here, opened at once,
   * nothing stored): a fresh worker's first read then finds that code compiled and the data
   * key in use, rather than paying for both while an app waits on it.
   */
  warmUp(): Promise<void>
  readonly encrypted: boolean
}

export function sealedStorage(inner: StorageAdapter, keyring: Keyring, codec: EnvelopeCodec): SealedStorage {
  const records = recordsOf(inner)
  if (!records) throw new SessionfoldError('INVALID_ARGUMENT', `the record codec needs storage made by composeStorage (the ${inner.kind} adapter is not)`)
  /** createdAt per session (bound into each block): a block of an earlier life does not open. */
  const lives = new Map<SessionId, number>()
  /** Per session, the last append's turn to go down to the inner adapter. */
  const issuing = new Map<SessionId, Promise<void>>()

  const corrupt = (id: SessionId, what: string, err: unknown, seq?: number) =>
    new SessionfoldError('CORRUPT_LOG', `${where(id, seq)}: ${what} does not open: ${(err as Error).message}`, { sessionId: id, seq })

  async function openEnvelope(id: SessionId, aad: string, text: unknown, what: string, seq?: number): Promise<Uint8Array> {
    const bytes = typeof text === 'string' ? fromBase64(text) : undefined
    try {
      if (!bytes) throw new Unreadable('not base64')
      return await codec.open(aad, bytes)
    } catch (err) {
      if (isSessionfoldError(err, 'KEY_REJECTED')) throw err
      throw corrupt(id, what, err, seq)
    }
  }

  async function sealHeader(header: SessionHeader): Promise<SessionHeader> {
    if (!codec.encrypted) return header
    // Checked here: the stored form the inner adapter checks is a stand-in.
    const parsed = safeParse(sessionHeaderSchema, header)
    if (!parsed.success)
      throw new SessionfoldError(
        'INVALID_ARGUMENT',
        `header for session ${describe((header as { id?: unknown } | null)?.id)} is malformed: ${parsed.error.issues.map((i) => i.message).join('; ')}`,
      )
    const envelope = await codec.seal(`header ${header.id} ${header.createdAt}`, encoder.encode(JSON.stringify(header)))
    const stored: SealedHeader = {
      version: 1,
      id: header.id,
      createdAt: header.createdAt,
      seedLength: header.seedLength,
      delegationDepth: 0,
      origin: 'root',
      sealed: toBase64(envelope),
    }
    return stored
  }

  async function openHeader(stored: SessionHeader): Promise<SessionHeader> {
    const sealed = (stored as Partial<SealedHeader>).sealed
    lives.set(stored.id, stored.createdAt)
    if (sealed === undefined) {
      if (codec.encrypted)
        throw new SessionfoldError('CORRUPT_LOG', `${where(stored.id)}: its header is not encrypted, in an encrypted store`, { sessionId: stored.id })
      return stored
    }
    const plain = await openEnvelope(stored.id, `header ${stored.id} ${stored.createdAt}`, sealed, 'its header')
    let header: SessionHeader
    try {
      header = JSON.parse(decoder.decode(plain)) as SessionHeader
    } catch (err) {
      throw corrupt(stored.id, 'its header', err)
    }
    if (header.id !== stored.id || header.createdAt !== stored.createdAt || header.seedLength !== stored.seedLength) {
      throw new SessionfoldError('CORRUPT_LOG', `${where(stored.id)}: its sealed header does not match the stored one`, { sessionId: stored.id })
    }
    return header
  }

  async function lifeOf(id: SessionId): Promise<number> {
    const known = lives.get(id)
    if (known !== undefined) return known
    const info = await inner.getSession(id)
    if (!info) throw new SessionfoldError('SESSION_NOT_FOUND', `${where(id)} does not exist`, { sessionId: id })
    lives.set(id, info.header.createdAt)
    return info.header.createdAt
  }

  /** The inner records of `events` (first seq `from`): blocks when sealing is due, else as given. */
  async function encodeEvents(id: SessionId, createdAt: number, events: readonly EncodedEvent[]): Promise<readonly EncodedEvent[]> {
    if (events.length === 0) return events
    // A batch that is not contiguous is refused here (nothing of it goes down, plain or not).
    for (let i = 1; i < events.length; i++) {
      const seq = events[i]!.event.seq
      if (seq !== events[0]!.event.seq + i)
        throw new SessionfoldError('SEQ_CONFLICT', `batch for ${where(id, seq)} is not contiguous: expected seq ${events[0]!.event.seq + i}`, {
          sessionId: id,
          seq,
        })
    }
    let size = 0
    for (const e of events) size += e.json.length
    if (!codec.encrypted && !codec.compresses(size)) return events
    const out: EncodedEvent[] = []
    for (let i = 0; i < events.length; ) {
      let j = i
      let bytes = 0
      while (j < events.length && j - i < BLOCK_EVENTS && (j === i || bytes + events[j]!.json.length <= BLOCK_BYTES)) bytes += events[j++]!.json.length + 1
      const from = events[i]!.event.seq
      const n = j - i
      const text = events
        .slice(i, j)
        .map((e) => e.json)
        .join('\n')
      const envelope = await codec.seal(`events ${id} ${createdAt} ${from} ${n}`, utf8(text))
      out.push(record(from, toBase64(envelope), n))
      for (let k = 1; k < n; k++) out.push(record(from + k, from))
      i = j
    }
    return out
  }

  /** The inner record at `seq` (the first of a block read from its middle). */
  async function recordAt(id: SessionId, seq: number, signal: AbortSignal | undefined): Promise<SessionEvent | undefined> {
    for await (const page of inner.readEvents(id, { from: seq, to: seq + 1, signal })) return page[0]
    return undefined
  }

  /** The texts of the events of the block whose first record is `head` (its envelope checked), and its first seq. */
  async function openLines(id: SessionId, createdAt: number, head: SessionEvent | undefined, seq: number): Promise<{ from: number; lines: string[] }> {
    if (head?.type !== '' || typeof head.data !== 'string' || !Number.isInteger(head.time) || head.time < 1) {
      throw corrupt(id, 'a block record', new Error('the block it belongs to is missing or malformed'), seq)
    }
    const from = head.seq
    const n = head.time
    const plain = await openEnvelope(id, `events ${id} ${createdAt} ${from} ${n}`, head.data, `the block of events from seq ${from}`, from)
    const lines = decoder.decode(plain).split('\n')
    if (lines.length !== n || from + n <= seq) throw corrupt(id, `the block from seq ${from}`, new Error('its events are not the seqs it stands for'), seq)
    return { from, lines }
  }

  /** The events of the block whose first record is `head`, checked against the seqs it stands for. */
  async function openBlock(id: SessionId, createdAt: number, head: SessionEvent | undefined, seq: number): Promise<SessionEvent[]> {
    const { from, lines } = await openLines(id, createdAt, head, seq)
    let events: SessionEvent[]
    try {
      events = lines.map((l) => JSON.parse(l) as SessionEvent)
    } catch (err) {
      throw corrupt(id, `the block from seq ${from}`, err, seq)
    }
    if (events.some((e, i) => e?.seq !== from + i)) {
      throw corrupt(id, `the block from seq ${from}`, new Error('its events are not the seqs it stands for'), seq)
    }
    return events
  }

  /**
   * Events `range` of `id` as `block` and `plain` make them of a block (its head record, the seq
   * read from) and of a record stored plain: parsed events (readEvents) or their texts
   * (readTexts). With `texts`, the inner records are read as texts where the inner adapter has
   * them so: a pointer is then checked by its text, and only a block's own record is parsed.
   */
  async function* walk<T>(
    id: SessionId,
    range: ReadRange | undefined,
    block: (createdAt: number, head: SessionEvent | undefined, seq: number) => Promise<{ from: number; items: T[] }>,
    plain: (r: SessionEvent | string) => T,
    texts = false,
    given?: SessionEvent[], // the inner records, when read already (getSessions)
  ): AsyncGenerator<T[]> {
    const to = range?.to
    const createdAt = codec.encrypted ? await lifeOf(id) : 0
    let covered = range?.from ?? 0 // seqs below this were given out
    let head = -1 // the first seq of the block opened last
    let pointer = pointersTo(head) // the test of its pointers' texts
    let next = range?.from ?? 0 // the seq of the next inner record (texts carry theirs unparsed)
    let out: T[] = []
    const records = given ? [given] : texts && inner.readTexts ? inner.readTexts(id, range, skipPointers) : inner.readEvents(id, range)
    for await (const page of records) {
      for (const r of page) {
        const seq = typeof r === 'string' ? next : r.seq
        next = seq + 1
        if (seq < covered) {
          // A pointer of the block opened last: checked, so verify sees a damaged one ('' when skipped as readTexts was told: checked by its store).
          if (typeof r === 'string' ? r !== '' && !pointer(r, seq) : !isPointer(r, seq, head))
            throw corrupt(id, 'a block record', new Error(`it does not point to the block from seq ${head} it lies in`), seq)
          continue
        }
        if (r === '') throw corrupt(id, 'a block record', new Error('it was skipped as a pointer of a block that does not cover it'), seq)
        if (typeof r === 'string' ? !isBlockText(r, seq) : r.type !== '') {
          if (codec.encrypted) throw new SessionfoldError('CORRUPT_LOG', `${where(id, seq)} is not encrypted, in an encrypted store`, { sessionId: id, seq })
          out.push(plain(r))
          covered = seq + 1
          continue
        }
        let e: SessionEvent
        try {
          e = typeof r === 'string' ? (JSON.parse(r) as SessionEvent) : r
        } catch (err) {
          throw corrupt(id, 'a block record', err, seq)
        }
        let first: SessionEvent | undefined = e
        if (typeof e.data === 'number') {
          // The range starts inside a block: its first record is before the range.
          if (!Number.isInteger(e.data) || e.data < 0 || e.data >= seq) throw corrupt(id, 'a block record', new Error('it names no block'), seq)
          first = await recordAt(id, e.data, range?.signal)
        }
        const opened = await block(createdAt, first, seq)
        head = opened.from
        pointer = pointersTo(head)
        const end = opened.from + opened.items.length
        for (let s = Math.max(seq, opened.from); s < end && (to === undefined || s < to); s++) out.push(opened.items[s - opened.from]!)
        covered = end
      }
      if (out.length >= READ_PAGE) {
        yield out
        out = []
      }
    }
    if (out.length > 0) yield out
  }

  const readEvents = (id: SessionId, range?: ReadRange, given?: SessionEvent[]): AsyncGenerator<SessionEvent[]> =>
    walk(
      id,
      range,
      async (createdAt, head, seq) => {
        const items = await openBlock(id, createdAt, head, seq)
        return { from: items[0]!.seq, items }
      },
      (e) => e as SessionEvent,
      false,
      given,
    )

  /** As readEvents, the texts of the events: a block's lines as they were sealed, a plain record's JSON made again. */
  const readTexts = (id: SessionId, range?: ReadRange): AsyncGenerator<string[]> =>
    walk(
      id,
      range,
      async (createdAt, head, seq) => {
        const { from, lines } = await openLines(id, createdAt, head, seq)
        return { from, items: lines }
      },
      (r) => (typeof r === 'string' ? r : encodeEvent(r, id, Number.MAX_SAFE_INTEGER).json),
      true,
    )

  const log: LogStore = {
    kind: inner.kind,
    async createSession(header, seed = []) {
      await inner.createSession(await sealHeader(header), await encodeEvents(header.id, header.createdAt, seed))
      lives.set(header.id, header.createdAt)
    },
    append(id, batch) {
      // Blocks are sealed concurrently, but go down in the order the appends were called: the
      // inner adapter takes them as a queue (the fs adapter's group commit, for one).
      const records = (codec.encrypted ? lifeOf(id) : Promise.resolve(0)).then((createdAt) => encodeEvents(id, createdAt, batch))
      const before = issuing.get(id)
      let appended: Promise<void> | undefined
      const issued = (before ? before.then(() => records) : records).then((r) => {
        appended = inner.append(id, r)
      })
      const turn = issued.catch(() => {})
      issuing.set(id, turn)
      void turn.then(() => {
        if (issuing.get(id) === turn) issuing.delete(id)
      })
      return issued.then(() => appended!)
    },
    readEvents,
    readTexts,
    async getSession(id) {
      const info = await inner.getSession(id)
      if (!info) {
        lives.delete(id)
        return undefined
      }
      return { header: await openHeader(info.header), length: info.length } satisfies SessionInfo
    },
    async listSessions(options) {
      // A header that does not open is left out, as adapters leave out damaged ones (listIds
      // still names it, and verify reports it).
      const opened = await Promise.all(
        (await inner.listSessions(options)).map((h) =>
          openHeader(h).catch((err: unknown) => {
            if (isSessionfoldError(err, 'CORRUPT_LOG')) return undefined
            throw err
          }),
        ),
      )
      return opened.filter((h): h is SessionHeader => h !== undefined)
    },
    getSessions: inner.getSessions && ((ids, most) => openSessions(inner, ids, most, { openHeader, lives, readEvents })),
    createSessions:
      inner.createSessions && ((s) => createSealed(inner, s, { keyring: codec.encrypted ? keyring : undefined, sealHeader, encodeEvents, lives })),
    listIds: (options) => inner.listIds(options),
    async deleteSession(id) {
      await inner.deleteSession(id)
      lives.delete(id)
    },
    ...(inner.feed ? { feed: inner.feed } : {}),
    // No replaceRecords: records are replaced under the codec by rotateKey (reseal.ts), never above it.
    close: () => inner.close(),
  }
  // Checkpoint and history rows, meta and the engine's records: written once over the sealed records.
  const { history, ...composed } = composeStorage(log, sealedRecords(records, codec), {
    exists: async (id) => (await inner.getSession(id)) !== undefined,
    checkValue: checkSealedValue,
  })
  const storage: SealedStorage = {
    ...composed,
    // History rows where the storage has them (a read-only command's has none: it refolds).
    ...(inner.history ? { history } : {}),
    get encrypted() {
      return codec.encrypted
    },
    putMeta: async (key, value) => {
      if (key === CODEC_META_KEY) throw new SessionfoldError('INVALID_ARGUMENT', `meta key ${key} is the store's own`)
      await composed.putMeta!(key, value)
    },
    checkKey: (key) => keyring.check(key),
    rotateKey: async (newKey) => {
      if (!inner.replaceRecords) throw new SessionfoldError('INVALID_ARGUMENT', `rotateKey: the ${inner.kind} adapter has no replaceRecords`)
      const gen = await keyring.rotate(inner, newKey)
      codec.keys = keyring.dataKeys
      return gen
    },
    resealSession: (id) => resealSession(inner, codec, id),
    dropOldKeys: (gen) => keyring.dropOldKeys(inner, gen),
    refreshKeys: () => keyring.refresh(),
    warmUp,
  }
  async function warmUp(): Promise<void> {
    if (!codec.encrypted) return
    const header: SessionHeader = { version: 1, id: WARM_UP_ID, createdAt: 0, seedLength: 0, delegationDepth: 0, origin: 'root' }
    try {
      await openHeader(await sealHeader(header))
      const aad = `checkpoint ${WARM_UP_ID}`
      await codec.open(aad, await codec.seal(aad, utf8('{"warmUp":true}')))
    } finally {
      lives.delete(WARM_UP_ID)
    }
  }

  return storage
}
