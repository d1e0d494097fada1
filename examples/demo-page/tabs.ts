// One tab of a many-tabs test (test/page.test.ts): window.tab drives a store in this page.
import { openStore, type Session, type SessionView, type Store } from 'sessionfold'

let store: Store | undefined
const writers = new Map<string, Session>()
const views = new Map<string, SessionView>()
const code = (err: unknown) => (err as { code?: string }).code ?? String(err)

const tab = {
  /** Opens the store; `noSharedWorker` plays a browser without SharedWorker (Chrome on Android). */
  async open(name: string, worker: boolean | 'shared', noSharedWorker = false): Promise<string> {
    if (noSharedWorker) Object.defineProperty(globalThis, 'SharedWorker', { value: undefined, configurable: true })
    store = await openStore({ name, worker })
    return 'open'
  },
  async create(id: string): Promise<string> {
    writers.set(id, await store!.createSession({ id }))
    return 'created'
  },
  async write(id: string): Promise<string> {
    try {
      writers.set(id, await store!.openSession(id))
      return 'writing'
    } catch (err) {
      return code(err)
    }
  },
  async observe(id: string): Promise<string> {
    views.set(id, await store!.observe(id))
    return 'observing'
  },
  async turn(id: string): Promise<number> {
    return (await writers.get(id)!.append([{ type: 'turn/start' }, { type: 'turn/end' }])).lastSeq
  },
  turns: (id: string): number | null => views.get(id)?.projections.get('subagentTiming')?.turns ?? null,
  async spawn(id: string, childId: string): Promise<string> {
    writers.set(childId, await writers.get(id)!.spawn({ mode: 'one-shot', id: childId }))
    return 'spawned'
  },
  async children(id: string): Promise<{ id: string; activity?: string }[]> {
    const rows = await (views.get(id) ?? writers.get(id))!.listChildren()
    return rows.map((r) => ({ id: r.id, activity: r.kind === 'child' ? r.activity : r.reason }))
  },
}

Object.assign(window, { tab })
