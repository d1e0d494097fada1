// A sample agent session to look at: turns of messages and tool calls, two subagents (one with
// a child of its own) spawned along the way, and a run recorded from outside. `events` sets
// its length (the tests make one of 100,000).
import type { EventInput, Store } from 'sessionfold'

const TOOLS = ['read_file', 'grep', 'run_tests']

export async function makeSample(store: Store, events: number): Promise<string> {
  const id = `sample-${Date.now().toString(36)}`
  const root = await store.createSession({ id, cwd: '/work/app' })
  const batch = 1000
  let turn = 0
  for (let at = 0; at < events; ) {
    const n = Math.min(batch, events - at)
    const items: EventInput[] = []
    for (let i = 0; i < n; i++) {
      const seq = at + i
      if (seq % 40 === 0) items.push({ type: 'turn/start', data: { turn: ++turn } })
      else if (seq % 40 === 39) items.push({ type: 'turn/end' })
      else if (seq % 7 === 3) items.push({ type: 'tool/call', data: { tool: TOOLS[seq % 3]!, args: { path: `src/m${seq % 50}.ts` } } })
      else items.push({ type: 'message', data: { role: seq % 2 ? 'assistant' : 'user', text: `step ${seq} of turn ${turn}` } })
    }
    await root.append(items)
    at += n
    // Subagents along the way: their catalog facts land at these points of the parent's log.
    if (at === Math.min(events, batch) || (events > 4 * batch && at === Math.floor(events / 2 / batch) * batch)) {
      const kid = await root.spawn({ mode: 'continuable', label: at === Math.min(events, batch) ? 'researcher' : 'reviewer', id: `${id}-kid${at}` })
      await kid.append([{ type: 'turn/start' }, { type: 'message', data: { text: 'on it' } }, { type: 'turn/end' }])
      if (at === Math.min(events, batch)) await (await kid.spawn({ mode: 'one-shot', id: `${id}-kid${at}-helper` })).close()
      await kid.close()
    }
  }
  await root.recordExternal({ childId: `${id}-ci`, label: 'CI run' })
  await root.close()
  return id
}
