// Reliability: HTTP sync under chaos, seeded — equal logs everywhere (conflicts resolved by forks), never two histories in one log, every acknowledged event in exactly one session, nothing twice, no deleted session left (§12 sync over HTTP, §13 sync never splices, §15 deletes and conflicts)
// Three devices (two fs stores with the engine in its worker, one IndexedDB store on
// fake-indexeddb) and a sync server in a process of its own (fs, then PostgreSQL), with a fault
// proxy between them (test/support/fault-proxy.ts) that drops, delays, duplicates, reorders and
// cuts requests and responses, live streams included; the server is SIGKILLed and started again
// on the same store on a schedule, devices go offline, reconnect, write to their own and to
// shared sessions, and delete some of each (a shared one perhaps while another device writes to it). Then the faults stop, everything settles, and every side is read and checked
// (test/support/chaos/checks.ts). The short runs here use fixed seeds; `npm run chaos` runs long
// ones. A failure prints the seed and the command that runs it again.
import { describe, expect, it } from 'vitest'
import { checkSides, logOf, type Reported, type Side } from '../support/chaos/checks'
import { EVENT_TYPE, Ledger, chainOf } from '../support/chaos/ledger'
import { formatChaos, runChaos } from '../support/chaos/run'
import type { ServerKind } from '../support/chaos/server'
import { FAULT_KINDS } from '../support/fault-proxy'
import { postgresBin } from '../support/postgres'
import type { SessionEvent, SessionHeader, SyncConflict } from 'sessionfold'

const RUNS: { server: ServerKind; seed: number; seconds: number }[] = [
  { server: 'fs', seed: 20240611, seconds: 12 },
  { server: 'postgres', seed: 7331, seconds: 10 },
]

for (const run of RUNS) {
  describe.skipIf(run.server === 'postgres' && !postgresBin())(`sync chaos, ${run.server} server`, () => {
    it(`seed ${run.seed}, ${run.seconds} s of faults: every check holds on every side`, async () => {
      const result = await runChaos({ ...run, restartEveryMs: 4000, settleMs: 60_000 })
      const report = formatChaos(result)
      console.log(report)
      // The run did what it says: every fault, restarts, offline spells, concurrent writes.
      const s = result.summary
      for (const kind of FAULT_KINDS) expect(s.faults[kind], `${kind} never happened\n${report}`).toBeGreaterThan(0)
      expect(s.restarts, report).toBeGreaterThanOrEqual(1)
      expect(s.refused, report).toBeGreaterThan(0)
      expect(s.written.acked, report).toBeGreaterThan(200)
      expect(s.sessions, report).toBeGreaterThanOrEqual(6)
      expect(s.deleted, `no session was deleted\n${report}`).toBeGreaterThan(0)
      expect(s.conflicts.sessions.length, `no shared session was written on two devices at once\n${report}`).toBeGreaterThan(0)
      expect(s.conflicts.forked, `no conflict was resolved by a fork\n${report}`).toBeGreaterThan(0)
      expect(result.problems.length, report).toBe(0)
    }, 150_000)
  })
}

// The checks themselves, on sides made by hand: each kind of damage is found and told.
describe('the chaos checks', () => {
  const header = (id: string): SessionHeader => ({ version: 1, id, createdAt: 1, origin: 'root', seedLength: 0, delegationDepth: 0 }) as SessionHeader
  const events = (tags: string[]): SessionEvent[] =>
    tags.map((t, seq) => ({ seq, type: EVENT_TYPE, time: seq, data: { w: t.split(':')[0]!, n: Number(t.split(':')[1]) } }))
  const side = (name: string, logs: Record<string, string[]>): Side => ({
    name,
    logs: new Map(Object.entries(logs).map(([id, tags]) => [id, logOf(header(id), events(tags))])),
  })
  /** A ledger as the writers would keep it for these logs, each writer's own copy read as it wrote. */
  const ledgerOf = (writes: Record<string, Record<string, string[]>>): Ledger => {
    const ledger = new Ledger()
    for (const [writer, logs] of Object.entries(writes)) {
      for (const [session, tags] of Object.entries(logs)) {
        const chain = chainOf(tags)
        for (const [seq, tag] of tags.entries())
          if (tag.startsWith(`${writer}:`)) ledger.byTag.set(tag, { session, seq, tag, writer, prefix: chain[seq]!, acked: true })
      }
    }
    return ledger
  }
  const conflict = (id: string, seq: number): SyncConflict =>
    ({
      id,
      seq,
      reason: 'event',
      source: { version: 1, id, createdAt: 1, seedLength: 0, delegationDepth: 0 },
      target: { version: 1, id, createdAt: 1, seedLength: 0, delegationDepth: 0 },
    }) as SyncConflict

  it('equal logs everywhere pass', () => {
    const logs = { s: ['a:0', 'b:1', 'a:2'] }
    const r = checkSides([side('server', logs), side('a', logs), side('b', logs)], ledgerOf({ a: logs, b: logs }), [])
    expect(r.problems).toEqual([])
    expect(r.acked).toBe(3)
  })

  it('the splice: S and D share seq 0, each appends seq 1, and S-2 lands on D-1 — which log, which seqs, whose histories', () => {
    const s = { x: ['S:0', 'S:1', 'S:2'] }
    const d = { x: ['S:0', 'D:1', 'S:2'] }
    const reported: Reported[] = [{ device: 'S', conflict: conflict('x', 1) }]
    const r = checkSides([side('server', d), side('S', s), side('D', d)], ledgerOf({ S: s, D: { x: ['S:0', 'D:1'] } }), reported, 'report')
    expect(r.spliced).toBe(2)
    expect(r.problems).toHaveLength(2)
    expect(r.problems[0]).toMatch(
      /^TWO HISTORIES in x on server: seq 2 holds S:2, which S appended on top of its copy's seqs 1\.\.1 \(1:S:1\), but here seqs 1\.\.1 are another history \(1:D:1, written by D\)\. The copies part at seq 1 \(seqs 0\.\.0 are common\)/,
    )
    expect(r.problems[1]).toMatch(/^TWO HISTORIES in x on D:/)
  })

  it("onConflict 'report': logs that differ with no conflict reported, or a conflict without both witnesses, or a conflict where nothing differs", () => {
    const ledger = ledgerOf({ a: { s: ['a:0', 'a:1'] } })
    expect(checkSides([side('server', { s: ['a:0'] }), side('a', { s: ['a:0', 'a:1'] })], ledger, [], 'report').problems.join('\n')).toMatch(
      /^s differs between sides and no conflict was reported: events server 1, a 2/,
    )
    expect(checkSides([side('server', {}), side('a', { s: ['a:0', 'a:1'] })], ledger, [], 'report').problems.join('\n')).toMatch(/missing on server/)
    const half = { ...conflict('s', 1), target: undefined } as unknown as SyncConflict
    expect(
      checkSides([side('server', { s: ['a:0'] }), side('a', { s: ['a:0', 'a:1'] })], ledger, [{ device: 'a', conflict: half }], 'report').problems.join('\n'),
    ).toMatch(/without both witnesses/)
    const same = { s: ['a:0', 'a:1'] }
    expect(checkSides([side('server', same), side('a', same)], ledger, [{ device: 'a', conflict: conflict('s', 1) }], 'report').problems.join('\n')).toMatch(
      /reported a conflict \(event at seq 1\) yet every side holds the same log/,
    )
  })

  it("onConflict 'report': an acknowledged event lost, an event twice, an event nobody wrote, an event moved", () => {
    const ledger = ledgerOf({ a: { s: ['a:0', 'a:1', 'a:2'] } })
    const lost = checkSides([side('server', { s: ['a:0', 'a:1'] }), side('a', { s: ['a:0', 'a:1'] })], ledger, [], 'report')
    expect(lost.problems.join('\n')).toMatch(/acknowledged a:2 \(s seq 2\) is not in its writer's log: a holds nothing there \(2 events\)/)
    const twice = checkSides([side('a', { s: ['a:0', 'a:1', 'a:2', 'a:1'] })], ledger, [], 'report').problems.join('\n')
    expect(twice).toMatch(/s on a: a:1 at seq 1 and again at seq 3/)
    expect(twice).toMatch(/seq 3 holds a:1, which a wrote to s at seq 1/)
    expect(checkSides([side('a', { s: ['a:0', 'a:1', 'a:2', 'z:9'] })], ledger, [], 'report').problems.join('\n')).toMatch(
      /seq 3 holds z:9, which no writer wrote/,
    )
  })

  it('a deleted session left on a side; a deleted session gone everywhere takes its acknowledged events with it', () => {
    const logs = { s: ['a:0', 'a:1'], t: ['a:2'] }
    const ledger = ledgerOf({ a: logs })
    ledger.deleted.set('s', 'b')
    const left = checkSides([side('server', { t: ['a:2'] }), side('a', logs)], ledger, [])
    expect(left.problems.join('\n')).toMatch(/^s is on a, though b deleted it \(2 events\)$/m)
    expect(checkSides([side('server', { t: ['a:2'] }), side('a', { t: ['a:2'] })], ledger, []).problems).toEqual([])
  })

  it("onConflict 'fork': a conflict resolved by a fork passes; one left unresolved, an event in two sessions, or lost, is told", () => {
    // b wrote b:1 at seq 1 of s on top of a:0, a wrote a:1 there first: b's event moved to the fork s-f1.
    const fork = (id: string, from: string, tags: string[], seed: number): Side['logs'] =>
      new Map([[id, logOf({ ...header(id), origin: 'fork', forkedFrom: from, seedLength: seed } as SessionHeader, events(tags))]])
    const sideWith = (name: string) => {
      const base = side(name, { s: ['a:0', 'a:1'] })
      for (const [id, log] of fork('s-f1', 's', ['a:0', 'b:1'], 1)) base.logs.set(id, log)
      return base
    }
    const ledger = ledgerOf({ a: { s: ['a:0', 'a:1'] }, b: { s: ['a:0', 'b:1'] } })
    const resolved: Reported[] = [{ device: 'b', conflict: { ...conflict('s', 1), forkedAs: 's-f1' } }]
    const ok = checkSides([sideWith('server'), sideWith('a'), sideWith('b')], ledger, resolved)
    expect(ok.problems).toEqual([])
    expect(ok.acked).toBe(3)

    const open = checkSides([sideWith('server'), sideWith('a'), sideWith('b')], ledger, [{ device: 'b', conflict: conflict('s', 1) }])
    expect(open.problems.join('\n')).toMatch(/s: b reported a conflict \(at seq 1\) that no fork resolved/)

    const twiceOver = sideWith('b')
    twiceOver.logs.set('s', logOf(header('s'), events(['a:0', 'b:1'])))
    const two = checkSides([sideWith('server'), sideWith('a'), twiceOver], ledger, resolved).problems.join('\n')
    expect(two).toMatch(/acknowledged b:1 \(s seq 1\) is on b in s, s-f1: not in exactly one session/)
    expect(two).toMatch(/s differs between sides/)

    const gone = side('b', { s: ['a:0', 'a:1'] })
    const lost = checkSides([sideWith('server'), sideWith('a'), gone], ledger, resolved).problems.join('\n')
    expect(lost).toMatch(/acknowledged b:1 \(s seq 1\) is in no session on b, and neither s nor a fork of it was deleted/)
  })
})
