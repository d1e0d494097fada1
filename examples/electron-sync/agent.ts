// examples/electron-sync/agent.ts
// What both processes run: an agent session that delegates to subagents.
import type { Store } from 'sessionfold'
import type { Link } from './link'

/** One process's end: its store, its link to the other process, and its agents. */
export interface Side {
  store: Store
  link: Link
  /** Runs an agent in session `id` that spawns `children` subagents, each doing a short task. */
  runAgent(id: string, children: number): Promise<void>
}

/** An agent: a turn in which it delegates to subagents, one after the other. */
export async function runAgent(store: Store, id: string, children: number): Promise<void> {
  const agent = await store.createSession({ id, cwd: '/project' })
  await agent.append({ type: 'turn/start', data: { prompt: `work of ${id}` } })
  for (let i = 0; i < children; i++) {
    const child = await agent.spawn({ mode: i % 2 ? 'continuable' : 'one-shot', label: `${id} task ${i}`, events: [{ type: 'app/task', data: { i } }] })
    await child.append([{ type: 'turn/start' }, { type: 'app/result', data: { ok: true, i } }, { type: 'turn/end' }])
    await child.close()
  }
  await agent.append({ type: 'turn/end', data: { children } })
  await agent.close()
}
