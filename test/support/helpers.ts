// Support: shared helpers — rootHeader, ev/evs, readAll, expectCode, snapshotStore (the storage
// conformance suite's, src/testing/helpers.ts), dumpStore, until, eventsOf, appendThatKillsTheWorker
import type { SessionEvent, SessionHeader, SessionId } from '../../src/core/model'
import { expect } from 'vitest'
import type { Store } from '../../src/client/store'
import { expectCode } from '../../src/testing/helpers'

export { ev, evs, expectCode, readAll, recordsOf, rootHeader, snapshotStore } from '../../src/testing/helpers'

/** Everything a store shows through the client: headers, events and projection values, by id. */
export async function dumpStore(store: Store): Promise<Record<string, { header: SessionHeader; events: SessionEvent[]; values: unknown; faults: unknown }>> {
  const out: Record<string, { header: SessionHeader; events: SessionEvent[]; values: unknown; faults: unknown }> = {}
  for (const header of await store.listSessions({ limit: 10_000 })) {
    const view = await store.observe(header.id)
    const events: SessionEvent[] = []
    for await (const e of view.events()) events.push(e)
    const { values, faults } = view.projections.snapshot()
    out[header.id] = { header: { ...view.header }, events, values, faults }
    await view.close()
  }
  return out
}

/** Waits for `check` (sync or async) to hold, looking every `everyMs`; throws after `ms`. */
export async function until(check: () => boolean | Promise<boolean>, ms = 5000, everyMs = 10): Promise<void> {
  for (const end = Date.now() + ms; !(await check()); await new Promise((r) => setTimeout(r, everyMs))) {
    if (Date.now() > end) throw new Error(`condition not reached in ${ms} ms`)
  }
}

/** A session's events as a reader sees them (a view opened and closed). */
export async function eventsOf(store: Store, id: SessionId): Promise<SessionEvent[]> {
  const out: SessionEvent[] = []
  const view = await store.observe(id)
  try {
    for await (const e of view.events()) out.push(e)
  } finally {
    await view.close()
  }
  return out
}

/**
 * Appends `app/die` through a session whose engine is test/browser/dying-worker.ts (its worker
 * closes itself while folding it) and checks what the app sees: that append lands or fails with
 * WORKER_TERMINATED (its reply may or may not get out; browsers send no event), and the next one
 * fails with WORKER_TERMINATED rather than hang.
 */
export async function appendThatKillsTheWorker(session: { append(input: { type: string }): Promise<unknown> }): Promise<void> {
  const outcome = await session.append({ type: 'app/die' }).then(
    () => 'durable',
    (e: { code?: string }) => e.code,
  )
  expect(outcome).toMatch(/^(durable|WORKER_TERMINATED)$/)
  await expectCode(session.append({ type: 'app/after' }), 'WORKER_TERMINATED')
}
