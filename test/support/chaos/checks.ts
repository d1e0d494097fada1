// The end of a chaos run, checked on every side (each device and the server, read from their
// stores): (1) a session's log is the same on every side (with onConflict 'report': or a
// conflict was reported for it), and every conflict was reported with both witnesses (with
// 'fork': and resolved, naming its fork); (2) no log holds events of two histories: every event
// sits on the prefix its writer had when it wrote it, in the session it was written to (or a
// fork that took it, at the same seq); (3) nothing acknowledged is lost: with 'report', each is
// in its writer's log and in every copy of a session that had no conflict; with 'fork', each is
// on every side in exactly one session, the one it was written to or a fork that took it (a
// fork's seed, a copy of the common prefix, aside); (4) no event is there twice in a log; (5) no
// deleted session is anywhere (its events, acknowledged or not, went with it).
import type { SessionEvent, SessionHeader, SessionId, SyncConflict } from '../../../src/index-node'
import { chainOf, tagOf, type Ledger, type Written } from './ledger'

export interface Log {
  header: SessionHeader
  events: SessionEvent[]
  tags: string[]
}

export interface Side {
  /** A device's name (its writer's name too), or 'server'. */
  name: string
  logs: Map<SessionId, Log>
}

export interface Reported {
  device: string
  conflict: SyncConflict
}

export interface CheckResult {
  problems: string[]
  sessions: number
  /** Sessions some device reported a conflict for. */
  conflicted: SessionId[]
  /** Logs (session on a side) holding events of two histories. */
  spliced: number
  /** Acknowledged events checked. */
  acked: number
}

/** Each kind of problem is told in full this many times, then counted. */
const DETAILED = 8

const sameEvent = (a: SessionEvent, b: SessionEvent) =>
  a.seq === b.seq && a.type === b.type && a.time === b.time && JSON.stringify(a.data) === JSON.stringify(b.data)

/** The first seq where two logs differ (the shorter one's length when one is a prefix of the other). */
function parting(a: Log, b: Log): number {
  const n = Math.min(a.events.length, b.events.length)
  for (let s = 0; s < n; s++) if (!sameEvent(a.events[s]!, b.events[s]!)) return s
  return n
}

/** `seq:tag` of tags[from, to), the first `max` of them. */
function showTags(tags: readonly string[], from: number, to: number, max = 6): string {
  const end = Math.min(to, from + max)
  const shown = tags
    .slice(from, end)
    .map((t, i) => `${from + i}:${t}`)
    .join(' | ')
  return shown ? `${shown}${end < to ? ' | …' : ''}` : '(nothing)'
}

/**
 * Whether `id` is `session` or a fork made from it by a conflict (a fork of one, and so on),
 * by the headers' `forkedFrom` (`parents`, from every side), and else by the id: such forks'
 * ids begin with the session's id and `-f` (src/engine/conflict-fork.ts; cut to 128 characters).
 */
export function takenBy(id: SessionId, session: SessionId, parents: ReadonlyMap<SessionId, SessionId> = new Map()): boolean {
  for (let at: SessionId | undefined = id, n = 0; at !== undefined && n < 1000; at = parents.get(at), n++) {
    if (at === session || at.startsWith(`${session}-f`)) return true
  }
  return false
}

/** How the devices resolved conflicts (their connect's onConflict). */
export type ConflictMode = 'fork' | 'report'

export function checkSides(sides: readonly Side[], ledger: Ledger, reported: readonly Reported[], mode: ConflictMode = 'fork'): CheckResult {
  const problems: string[] = []
  const told = new Map<string, number>()
  const tell = (kind: string, message: string) => {
    const n = (told.get(kind) ?? 0) + 1
    told.set(kind, n)
    if (n <= DETAILED) problems.push(message)
  }
  const byName = new Map(sides.map((s) => [s.name, s]))
  const parents = new Map<SessionId, SessionId>()
  for (const side of sides) for (const [id, log] of side.logs) if (log.header.forkedFrom) parents.set(id, log.header.forkedFrom)
  const ids = [...new Set(sides.flatMap((s) => [...s.logs.keys()]))].sort()
  const conflictsOf = new Map<SessionId, Reported[]>()
  for (const r of reported) conflictsOf.set(r.conflict.id, [...(conflictsOf.get(r.conflict.id) ?? []), r])

  // (1) Equal on every side, or a conflict reported with both witnesses.
  for (const id of ids) {
    const holders = sides.filter((s) => s.logs.has(id))
    const missing = sides.filter((s) => !s.logs.has(id)).map((s) => s.name)
    const first = holders[0]!.logs.get(id)!
    const differ = holders.filter((s) => {
      const log = s.logs.get(id)!
      return log.header.createdAt !== first.header.createdAt || log.events.length !== first.events.length || parting(log, first) < first.events.length
    })
    const conflicts = conflictsOf.get(id) ?? []
    if (mode === 'fork') {
      // A device's replication closed before its move reports the fork in the next one, perhaps at another seq.
      for (const { device, conflict: c } of conflicts)
        if (c.reason === 'event' && !conflicts.some((k) => k.device === device && k.conflict.forkedAs))
          tell('unresolved', `${id}: ${device} reported a conflict (at seq ${c.seq}) that no fork resolved`)
    }
    if (mode === 'fork' && (differ.length > 0 || missing.length > 0)) {
      const lengths = holders.map((s) => `${s.name} ${s.logs.get(id)!.events.length}`).join(', ')
      tell('unequal', `${id} differs between sides: events ${lengths}${missing.length ? `; missing on ${missing.join(', ')}` : ''}`)
    }
    if (mode === 'fork') {
      witnessed(id, conflicts, tell)
      continue
    }
    if (differ.length === 0 && missing.length === 0) {
      for (const { device, conflict: c } of conflicts)
        tell('spurious', `${id}: ${device} reported a conflict (${c.reason} at seq ${c.seq}) yet every side holds the same log (${first.events.length} events)`)
      continue
    }
    if (conflicts.length === 0) {
      const lengths = holders.map((s) => `${s.name} ${s.logs.get(id)!.events.length}`).join(', ')
      const parts = differ.map((s) => {
        const log = s.logs.get(id)!
        const at = parting(log, first)
        return `${s.name} parts from ${holders[0]!.name} at seq ${at} (${showTags(log.tags, at, Math.min(log.tags.length, at + 3))} against ${showTags(first.tags, at, Math.min(first.tags.length, at + 3))})`
      })
      tell(
        'unequal',
        `${id} differs between sides and no conflict was reported: events ${lengths}${missing.length ? `; missing on ${missing.join(', ')}` : ''}${parts.length ? `; ${parts.join('; ')}` : ''}`,
      )
    }
    witnessed(id, conflicts, tell)
  }

  // (2) No log holds events of two histories.
  let spliced = 0
  for (const side of sides) {
    for (const [id, log] of side.logs) {
      const chain = chainOf(log.tags)
      let found = false
      for (const [s, tag] of log.tags.entries()) {
        const w = ledger.byTag.get(tag)
        if (!w) {
          tell('unknown', `${id} on ${side.name}: seq ${s} holds ${tag}, which no writer wrote`)
          continue
        }
        const moved = mode === 'fork' && w.seq === s && takenBy(id, w.session, parents) && log.header.origin === 'fork'
        if ((w.session !== id && !moved) || w.seq !== s) {
          tell('moved', `${id} on ${side.name}: seq ${s} holds ${tag}, which ${w.writer} wrote to ${w.session} at seq ${w.seq}`)
          continue
        }
        if (w.prefix === chain[s] || found) continue
        found = true
        spliced++
        tell('splice', describeSplice(side, id, log, s, w, byName.get(w.writer)?.logs.get(id)))
      }
    }
  }

  // (3) Nothing acknowledged lost; (4) no event twice.
  const acked = ledger.acked()
  if (mode === 'fork') checkTaken(sides, ledger, acked, parents, tell)
  for (const w of mode === 'fork' ? [] : acked) {
    if (ledger.deleted.has(w.session)) continue
    const own = byName.get(w.writer)?.logs.get(w.session)
    if (own?.tags[w.seq] !== w.tag)
      tell(
        'lost',
        `acknowledged ${w.tag} (${w.session} seq ${w.seq}) is not in its writer's log: ${w.writer} ${own ? `holds ${own.tags[w.seq] ?? 'nothing'} there (${own.tags.length} events)` : 'has no such session'}`,
      )
    if (conflictsOf.has(w.session)) continue
    for (const side of sides) {
      const log = side.logs.get(w.session)
      if (log && log.tags[w.seq] !== w.tag)
        tell(
          'lost',
          `acknowledged ${w.tag} (${w.session} seq ${w.seq}, no conflict reported) is not on ${side.name}: it holds ${log.tags[w.seq] ?? 'nothing'} there (${log.tags.length} events)`,
        )
    }
  }
  for (const side of sides) {
    for (const [id, log] of side.logs) {
      const seen = new Map<string, number>()
      for (const [s, tag] of log.tags.entries()) {
        const was = seen.get(tag)
        if (was !== undefined) tell('twice', `${id} on ${side.name}: ${tag} at seq ${was} and again at seq ${s}`)
        else seen.set(tag, s)
      }
    }
  }
  // (5) No deleted session anywhere.
  for (const side of sides)
    for (const id of side.logs.keys())
      if (ledger.deleted.has(id))
        tell('deleted', `${id} is on ${side.name}, though ${ledger.deleted.get(id)} deleted it (${side.logs.get(id)!.events.length} events)`)
  for (const [kind, n] of told) if (n > DETAILED) problems.push(`… and ${n - DETAILED} more of the kind "${kind}"`)
  return { problems, sessions: ids.length, conflicted: [...conflictsOf.keys()].sort(), spliced, acked: acked.length }
}

/** Every conflict reported with both witnesses. */
function witnessed(id: SessionId, conflicts: readonly Reported[], tell: (kind: string, message: string) => void): void {
  for (const { device, conflict: c } of conflicts) {
    const ok = (w: SyncConflict['source'] | undefined) => w !== undefined && w.id === id && typeof w.createdAt === 'number'
    if (!ok(c.source) || !ok(c.target)) tell('witness', `${id}: ${device} reported a conflict at seq ${c.seq} without both witnesses: ${JSON.stringify(c)}`)
  }
}

/**
 * (3) with forks: each acknowledged event is on every side in exactly one session, as one of its
 * own events (past a fork's seed), the one it was written to or a fork that took it; on none
 * only when that session or such a fork was deleted.
 */
function checkTaken(
  sides: readonly Side[],
  ledger: Ledger,
  acked: readonly Written[],
  parents: ReadonlyMap<SessionId, SessionId>,
  tell: (kind: string, message: string) => void,
): void {
  for (const side of sides) {
    const where = new Map<string, SessionId[]>()
    for (const [id, log] of side.logs)
      for (let s = log.header.seedLength; s < log.tags.length; s++) where.set(log.tags[s]!, [...(where.get(log.tags[s]!) ?? []), id])
    for (const w of acked) {
      const found = where.get(w.tag) ?? []
      if (found.length === 0) {
        if (![...ledger.deleted.keys()].some((id) => takenBy(id, w.session, parents)))
          tell(
            'lost',
            `acknowledged ${w.tag} (${w.session} seq ${w.seq}) is in no session on ${side.name}, and neither ${w.session} nor a fork of it was deleted`,
          )
      } else if (found.length > 1 || !takenBy(found[0]!, w.session, parents)) {
        tell(
          'lost',
          `acknowledged ${w.tag} (${w.session} seq ${w.seq}) is on ${side.name} in ${found.join(', ')}: not in exactly one session that it was written to or that took it`,
        )
      }
    }
  }
}

/** Which log, which seqs, whose histories: the event at `s` and the prefix its writer wrote it on. */
function describeSplice(side: Side, id: SessionId, log: Log, s: number, w: Written, writers: Log | undefined): string {
  const head = `TWO HISTORIES in ${id} on ${side.name}: seq ${s} holds ${w.tag}, which ${w.writer} appended`
  if (!writers || chainOf(writers.tags.slice(0, s)).at(-1) !== w.prefix) {
    return `${head} on another prefix than this log's seqs 0..${s - 1} (${showTags(log.tags, 0, s)}); ${w.writer}'s own copy no longer shows that prefix either`
  }
  let p = 0
  while (p < s && writers.tags[p] === log.tags[p]) p++
  const whose = (tags: readonly string[]) => [...new Set(tags.slice(p, s).map((t) => t.split(':')[0]))].join(', ')
  return (
    `${head} on top of its copy's seqs ${p}..${s - 1} (${showTags(writers.tags, p, s)}), ` +
    `but here seqs ${p}..${s - 1} are another history (${showTags(log.tags, p, s)}, written by ${whose(log.tags)}). ` +
    `The copies part at seq ${p}${p > 0 ? ` (seqs 0..${p - 1} are common)` : ''}; this log has ${log.tags.length} events, from seq ${s}: ${showTags(log.tags, s, log.tags.length, 4)}`
  )
}

/** A side's logs with their tags. */
export function logOf(header: SessionHeader, events: SessionEvent[]): Log {
  return { header, events, tags: events.map(tagOf) }
}
