// The runtime of projection units for one session: folding, fault containment, lazy views,
// and the way states go to and come back from a checkpoint row.
import { z } from 'zod/mini'
import type { CheckpointRow } from '../storage/types'
import { hash53 } from '../core/hash'
import { sameWitness, witnessOf, type Json, type SessionEvent, type SessionHeader } from '../core/model'
import { countSchema, safeParse, witnessSchema, type AnySchema } from '../core/schemas'
import type { ProjectionDefinition, ProjectionFault, ProjectionSnapshot } from '../core/projection'
import { nonJsonProblem } from '../core/validate'
import { thrownText } from '../core/errors'

export interface UnitSlot {
  readonly def: ProjectionDefinition
  state: unknown
  /** The last seq folded into `state` (-1: none). Advances even when `apply` ignored the event. */
  seq: number
  fault?: ProjectionFault
  /** Why the unit faulted, for logs and verify. */
  faultReason?: string
  /** The view of `viewOf`, cached for one state reference. */
  viewState?: unknown
  viewValue?: Json | null
  /** When `viewValue` is the list `before` grown at its end: `before` and its length (see grownFrom). */
  viewGrowth?: { before: unknown; from: number }
}

/**
 * The length of `before` when the slot's current view is `before` grown at its end, else
 * undefined. Known without a scan when `before` is the view it replaced (the usual case: the
 * change feed asks about the value it pushed last, which viewOf compared already).
 */
export function viewGrownFrom(slot: UnitSlot, before: unknown): number | undefined {
  const growth = slot.viewGrowth
  return growth && growth.before === before ? growth.from : grownFrom(before, slot.viewValue)
}

/** Why a unit faulted, as text (never throws, whatever was thrown). */
const reason = thrownText

/**
 * Throws when `value` is a promise (or any thenable): units are synchronous. Its rejection, if
 * it comes, is taken here, so that it is not left unhandled in the engine's thread.
 */
function notAsync(value: unknown, what: string): void {
  if ((typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function') {
    Promise.resolve(value as PromiseLike<unknown>).then(undefined, () => {})
    throw new Error(`${what} returned a promise: units are synchronous`)
  }
}

function faultSlot(slot: UnitSlot, err: unknown): void {
  slot.fault = 'corrupt'
  slot.faultReason = reason(err)
  slot.state = undefined
  slot.viewState = undefined
  slot.viewValue = null
  slot.viewGrowth = undefined
}

/** Fresh slots for a session: `init` of every unit (a throwing init is a fault, not a crash). */
export function initSlots(defs: readonly ProjectionDefinition[], header: SessionHeader): UnitSlot[] {
  return defs.map((def) => {
    const slot: UnitSlot = { def, state: undefined, seq: -1 }
    try {
      const state = def.init(header, header.seedLength)
      notAsync(state, 'init')
      slot.state = state
    } catch (err) {
      faultSlot(slot, err)
    }
    return slot
  })
}

/**
 * Folds one event into every unit that has not seen it. Returns true when some state changed
 * (a new reference) or a unit faulted.
 */
export function foldEvent(slots: readonly UnitSlot[], event: SessionEvent): boolean {
  let changed = false
  for (const slot of slots) {
    if (slot.fault || event.seq <= slot.seq) continue
    try {
      const next = slot.def.apply(slot.state, event)
      notAsync(next, 'apply')
      if (next !== slot.state) {
        slot.state = next
        changed = true
      }
      slot.seq = event.seq
    } catch (err) {
      faultSlot(slot, err)
      changed = true
    }
  }
  return changed
}

/**
 * The length of `before` when `after` is `before` grown at its end: both arrays, and every item
 * of `before` the same reference at the same index in `after` (a pure fold that appends to a
 * list, as the catalog's does, keeps its old entries). Undefined otherwise. O(before.length)
 * reference comparisons: far below cloning, validating or stringifying the list.
 */
export function grownFrom(before: unknown, after: unknown): number | undefined {
  if (!Array.isArray(before) || !Array.isArray(after) || after.length <= before.length) return undefined
  for (let i = 0; i < before.length; i++) if (before[i] !== after[i]) return undefined
  return before.length
}

/**
 * The schema of one item of a list-shaped view (`z.array(item)`, classic or mini), if it is one
 * and has no rule on the list as a whole (`.max()`, `.refine()`: those see the whole list every
 * time). Read from zod's core definition, which classic and mini array schemas share.
 */
function itemSchema(schema: AnySchema): AnySchema | undefined {
  const def = schema._zod.def
  if (def.type !== 'array' || (def.checks?.length ?? 0) > 0) return undefined
  return (def as z.core.$ZodArrayDef).element
}

/**
 * Validates a view value; a list that only grew since the last valid value has its new items
 * checked alone. Returns the length it grew from, if it did.
 */
function checkView(slot: UnitSlot, value: unknown): number | undefined {
  const schema = slot.def.view!.schema
  const from = grownFrom(slot.viewValue, value)
  const item = from === undefined ? undefined : itemSchema(schema)
  const fail = (message: string | undefined) => new Error(`view of "${slot.def.key}" fails its schema: ${message}`)
  if (item) {
    const list = value as unknown[]
    for (let i = from!; i < list.length; i++) {
      const parsed = safeParse(item, list[i])
      if (!parsed.success) throw fail(`[${i}]: ${parsed.error.issues[0]?.message}`)
    }
    return from
  }
  const parsed = safeParse(schema, value)
  if (!parsed.success) throw fail(parsed.error.issues[0]?.message)
  return from
}

/**
 * Throws unless the view value (its new items alone, when it is a list that only grew) is plain
 * JSON, as every value that reaches the app must be: a schema that lets anything through
 * (`z.any()`, `z.custom()`) or an optional field left `undefined` would otherwise reach the
 * client, which refuses the whole frame (PROJECTIONS_UNAVAILABLE for every view of the
 * session), or fail the frame at a worker's port (a function: a DataCloneError) after the
 * append that made it was written. The unit faults instead, naming where.
 */
function checkJson(slot: UnitSlot, value: unknown, from: number | undefined): void {
  let problem: string | undefined
  if (from === undefined) problem = nonJsonProblem(value)
  else {
    const list = value as unknown[]
    for (let i = from; i < list.length && problem === undefined; i++) {
      const p = nonJsonProblem(list[i])
      if (p !== undefined) problem = `${p} of item [${i}]`
    }
  }
  if (problem !== undefined) throw new Error(`view of "${slot.def.key}" is not plain JSON: ${problem}`)
}

/** The unit's view value (null when faulted), computed once per state reference and validated. */
export function viewOf(slot: UnitSlot): Json | null {
  const view = slot.def.view
  if (slot.fault || !view) return null
  if (slot.viewState === slot.state && slot.viewValue !== undefined) return slot.viewValue
  try {
    const value = view.view(slot.state)
    notAsync(value, 'view')
    const from = checkView(slot, value)
    checkJson(slot, value, from)
    slot.viewGrowth = from === undefined ? undefined : { before: slot.viewValue, from }
    slot.viewState = slot.state
    slot.viewValue = (value === undefined ? null : value) as Json | null
    return slot.viewValue
  } catch (err) {
    faultSlot(slot, err)
    return null
  }
}

export function snapshotOf(slots: readonly UnitSlot[], asOfSeq: number): ProjectionSnapshot {
  const values: Record<string, Json | null> = {}
  const faults: Record<string, ProjectionFault> = {}
  for (const slot of slots) {
    if (slot.def.view) values[slot.def.key] = viewOf(slot)
    if (slot.fault) faults[slot.def.key] = slot.fault
  }
  return { asOfSeq, values, faults }
}

const checkpointRowSchema = z.strictObject({
  sum: z.string(),
  witness: witnessSchema,
  rows: z.record(z.string(), z.strictObject({ ver: countSchema, seq: z.int().check(z.minimum(-1)), val: z.unknown() })),
})

/**
 * Slots restored from a checkpoint row, and the first seq still to fold. The row is used only
 * if its witness names this life of the session and no unit claims more than the log holds;
 * within it, a unit is kept only if its `ver` matches and its `val` passes `stateSchema`.
 * Anything else refolds from seq 0: the checkpoint is a cache, never the authority.
 */
export function restoreSlots(
  defs: readonly ProjectionDefinition[],
  header: SessionHeader,
  row: unknown,
  length: number,
): { slots: UnitSlot[]; from: number; kept: number; problem?: string } {
  const slots = initSlots(defs, header)
  let kept = 0
  let problem: string | undefined
  try {
    const parsed = safeParse(checkpointRowSchema, row)
    if (!parsed.success) problem = row === undefined ? undefined : `not a checkpoint row (${parsed.error.issues[0]?.message ?? 'bad shape'})`
    else if (parsed.data.sum !== sumOf(row as CheckpointRow)) problem = 'its checksum does not match its content'
    else if (!sameWitness(parsed.data.witness as never, header)) problem = 'it belongs to another life of this id (witness differs)'
    else {
      const ahead = Object.entries(parsed.data.rows).find(([, r]) => r.seq >= length)
      if (ahead) problem = `unit "${ahead[0]}" claims seq ${ahead[1].seq}, beyond the log's ${length} events`
    }
    if (!problem && parsed.success) {
      for (const slot of slots) {
        const r = parsed.data.rows[slot.def.key]
        if (slot.fault || !r || r.ver !== slot.def.stateVersion) continue // absent or another version: refold
        const state = safeParse(slot.def.stateSchema, r.val)
        if (!state.success) {
          problem ??= `state of "${slot.def.key}" fails its schema`
          continue
        }
        slot.state = state.data
        slot.seq = r.seq
        kept++
      }
    }
  } catch (err) {
    // A schema or transform that throws: ignore the whole row.
    return { slots: initSlots(defs, header), from: 0, kept: 0, problem: `reading it threw: ${reason(err)}` }
  }
  const live = slots.filter((s) => !s.fault)
  const from = live.length === 0 ? length : Math.min(...live.map((s) => s.seq + 1))
  return { slots, from, kept, ...(problem ? { problem } : {}) }
}

/** The row for the current states; faulted units and unserialisable states are left out (they refold). */
export function checkpointRowOf(header: SessionHeader, slots: readonly UnitSlot[]): { row: CheckpointRow; skipped: string[]; bytes: number } {
  const rows: CheckpointRow['rows'] = {}
  const skipped: string[] = []
  const witness = witnessOf(header)
  // The sum covers JSON.stringify({ witness, rows }) as a reader will see it; it is built from
  // each state's JSON, made once, rather than by stringifying the whole row again.
  const parts: string[] = []
  for (const slot of slots) {
    if (slot.fault) continue
    try {
      // The JSON form is what a cold read parses, so that is what is stored, whatever the adapter.
      const json = JSON.stringify(slot.state) ?? 'null'
      rows[slot.def.key] = { ver: slot.def.stateVersion, seq: slot.seq, val: JSON.parse(json) as unknown }
      parts.push(`${JSON.stringify(slot.def.key)}:{"ver":${slot.def.stateVersion},"seq":${slot.seq},"val":${json}}`)
    } catch {
      skipped.push(slot.def.key)
    }
  }
  const json = `{"witness":${JSON.stringify(witness)},"rows":{${parts.join(',')}}}`
  const row: CheckpointRow = { witness, rows, sum: hash53(json) }
  return { row, skipped, bytes: json.length }
}

/** The hash of a row's `{ witness, rows }` as stored: read back, its JSON is the same string. */
function sumOf(row: CheckpointRow): string {
  return hash53(JSON.stringify({ witness: row.witness, rows: row.rows }))
}
