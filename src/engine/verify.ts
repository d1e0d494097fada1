// verify: reads every log, checkpoint row and history row of the store and reports what is
// damaged. It changes nothing: reads go straight to storage, damaged rows are reported, not
// replaced (a writer rebuilds missing history rows; a damaged one is passed over by reads).
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type { ProjectionDefinition } from '../core/projection'
import type { VerifyDamage, VerifyStep, VerifyTotals } from '../core/protocol'
import { foldEvent, initSlots, restoreSlots, snapshotOf, type UnitSlot } from './units'
import type { StoreReader } from './reader'
import { ChainState, eventJson } from '../core/chain'
import { storedMarks } from './chains'
import type { SessionIndex } from './session-index'
import type { SessionMetaView } from '../core/units/meta'

/** What verify reads of the session index (session-index.ts), where the store keeps one. */
export type IndexCheck = Pick<SessionIndex, 'check'>

/** Sessions listed per storage call while verifying. */
const VERIFY_PAGE = 256

type Reader = Pick<StoreReader, 'listIds' | 'find' | 'checkpoint' | 'pages' | 'history' | 'records'>

const isCorrupt = (err: unknown): err is SessionfoldError => isSessionfoldError(err, 'CORRUPT_LOG')

/** JSON with sorted keys, to compare values built in different orders. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v,
  )
}

/** How much `verify` will read: stored sessions and their events (a moving target if written meanwhile). */
export async function verifyPlan(reader: Reader): Promise<VerifyTotals> {
  const totals: VerifyTotals = { sessions: 0, events: 0 }
  for (let after: SessionId | undefined; ; ) {
    const ids = await reader.listIds({ after, limit: VERIFY_PAGE })
    const infos = await Promise.all(ids.map((id) => reader.find(id).catch(() => undefined)))
    totals.sessions += ids.length
    for (const info of infos) totals.events += info?.length ?? 0
    if (ids.length < VERIFY_PAGE) return totals
    after = ids[ids.length - 1]
  }
}

/**
 * Verifies sessions in id order after `after`, until about `budget` events are read, and
 * says where to go on (`next: null` at the end).
 */
export async function verifyStep(
  reader: Reader,
  defs: readonly ProjectionDefinition[],
  after: SessionId | undefined,
  budget: number,
  signal?: AbortSignal,
  index?: IndexCheck,
): Promise<VerifyStep> {
  const step: VerifyStep = { sessions: 0, events: 0, damaged: [], next: null }
  for (;;) {
    const ids = await reader.listIds({ after, limit: VERIFY_PAGE })
    for (const id of ids) {
      if (signal?.aborted) throw new SessionfoldError('CANCELLED', 'verify was cancelled')
      const checked = await verifySession(reader, defs, id, signal, index)
      if (checked === undefined) continue // deleted meanwhile
      step.sessions++
      step.events += checked.events
      step.damaged.push(...checked.damaged)
      if (step.events >= budget) return { ...step, next: id }
    }
    if (ids.length < VERIFY_PAGE) return step
    after = ids[ids.length - 1]
  }
}

/**
 * One session: its header, every event (whole records, seqs 0..length-1 in order), and its
 * checkpoint row (usable, and giving the same values as a full refold). Undefined when the
 * session is gone.
 */
async function verifySession(
  reader: Reader,
  defs: readonly ProjectionDefinition[],
  id: SessionId,
  signal?: AbortSignal,
  index?: IndexCheck,
): Promise<{ events: number; damaged: VerifyDamage[] } | undefined> {
  const damaged: VerifyDamage[] = []
  let info
  try {
    info = await reader.find(id)
  } catch (err) {
    if (!isCorrupt(err)) throw err
    return { events: 0, damaged: [{ id, code: 'CORRUPT_LOG', detail: err.message }] }
  }
  if (!info) return undefined
  const { header, length } = info
  let row: unknown
  try {
    row = await reader.checkpoint(id)
  } catch (err) {
    if (!isCorrupt(err)) throw err
    damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: err.message })
  }
  const full = initSlots(defs, header)
  const cold = restoreSlots(defs, header, row, length)
  if (cold.problem) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `checkpoint of ${where(id)} is not used: ${cold.problem}` })
  // History rows: each usable (checked as a read at its position checks it) and, once the refold
  // reaches its position, giving the same values.
  const history = new Map<number, UnitSlot[]>()
  for (const at of (await reader.history?.list(id)) ?? []) {
    const what = `history row ${at} of ${where(id)}`
    if (at > length) {
      damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `${what} lies beyond the log's ${length} events` })
      continue
    }
    try {
      const stored = await reader.history!.get(id, at)
      const restored = restoreSlots(defs, header, stored?.at === at ? stored.row : undefined, at)
      if (restored.problem) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `${what} is not used: ${restored.problem}` })
      else if (restored.kept > 0) history.set(at, restored.slots)
    } catch (err) {
      if (!isCorrupt(err)) throw err
      damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `${what}: ${err.message}` })
    }
  }
  const compare = (what: string, slots: readonly UnitSlot[], at: number, only?: ReadonlySet<string>) => {
    const a = snapshotOf(full, at - 1)
    const b = snapshotOf(slots, at - 1)
    for (const key of only ?? new Set([...Object.keys(a.values), ...Object.keys(b.values)])) {
      if (canonical(a.values[key]) !== canonical(b.values[key]) || a.faults[key] !== b.faults[key]) {
        damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `${what} gives "${key}" a value that a full refold does not` })
      }
    }
  }
  // Chain marks (chains.ts): each stored one must be the chain value of the log at its position.
  const marks = await storedMarks(reader.records, header)
  for (const problem of marks.problems) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `chain marks of ${where(id)}: ${problem}` })
  for (const at of marks.values.keys()) {
    if (at > length) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `chain mark ${at} of ${where(id)} lies beyond the log's ${length} events` })
  }
  const chain = new ChainState()
  let next = 0
  let lastTime = header.createdAt
  try {
    for await (const page of reader.pages(id, { from: 0, to: length, signal })) {
      for (const e of page) {
        if (e.seq !== next) throw new SessionfoldError('CORRUPT_LOG', `${where(id)}: expected seq ${next}, read seq ${e.seq}`, { sessionId: id, seq: next })
        if (marks.values.size > 0) {
          chain.push(eventJson(e))
          const mark = marks.values.get(next + 1)
          if (mark !== undefined && mark !== chain.value)
            damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `chain mark ${next + 1} of ${where(id)} is not the chain value of the log there` })
        }
        foldEvent(full, e)
        lastTime = e.time
        // Only a row that was used can disagree with the refold; foldEvent skips what it holds.
        if (cold.kept > 0) foldEvent(cold.slots, e)
        next++
        const then = history.get(next)
        // The units the row holds (one it left out, faulted or of another version, is refolded by a read).
        if (then) compare(`history row ${next} of ${where(id)}`, then, next, new Set(then.filter((u) => u.seq === next - 1).map((u) => u.def.key)))
      }
    }
    if (next !== length) throw new SessionfoldError('CORRUPT_LOG', `${where(id)} holds ${next} readable events of ${length}`, { sessionId: id, seq: next })
  } catch (err) {
    if (!isCorrupt(err)) throw err
    damaged.push({ id, code: 'CORRUPT_LOG', detail: err.message })
    return { events: next, damaged }
  }
  if (cold.kept > 0) compare(`checkpoint of ${where(id)}`, cold.slots, length)
  if (index) {
    // The session index's row (§14): a cache, so a missing one or one behind the log (a writer's
    // pass on its way) is fine; one that cannot be read, says more than the log, or disagrees with it is not.
    const { stored, row, missing } = await index.check(id)
    const meta = snapshotOf(full, length - 1).values.sessionMeta as SessionMetaView | null
    const problem = !row
      ? stored && 'cannot be read'
      : row.createdAt !== header.createdAt
        ? "is an earlier session's of the same id"
        : row.length > length
          ? `counts ${row.length} events of ${length}`
          : row.length === length && (row.lastEventAt !== lastTime || canonical([row.title, row.tags]) !== canonical([meta?.title ?? null, meta?.tags ?? []]))
            ? 'gives another title, tags or last event time than the log'
            : missing.length > 0 && `has no entry in the index's lists ${missing.join(', ')}`
    if (problem) damaged.push({ id, code: 'CORRUPT_CHECKPOINT', detail: `the session index's row of ${where(id)} ${problem}` })
  }
  return { events: next, damaged }
}
