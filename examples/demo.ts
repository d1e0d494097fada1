// The Quick start demo: an agent session on the default store (files under .sessionfold/,
// the engine in a worker thread) spawns subagents that run turns; the parent's live catalog
// and each child's timing are printed as they change.
import { openStore, type Session } from '../src/index-node'

const store = await openStore() // Node: fs storage in .sessionfold/, engine in worker_threads
const parent = await store.createSession({ cwd: process.cwd() })
console.log(`session ${parent.id} (store: .sessionfold/)`)

const stops: (() => void)[] = []
stops.push(
  parent.projections.subscribe('subagentCatalog', (catalog, { seq }) => {
    const rows = (catalog ?? []).map((c) => `${c.label ?? c.id.slice(0, 8)} (${c.mode})`)
    console.log(`  [parent @${seq}] catalog: ${rows.length ? rows.join(', ') : 'no children yet'}`)
  }),
)

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function runAgent(child: Session, turns: number): Promise<void> {
  for (let t = 0; t < turns; t++) {
    await child.append({ type: 'turn/start', data: { turn: t } })
    await child.append({ type: 'agent/message', data: { text: `${child.header.id.slice(0, 8)} thinking about step ${t}` } })
    await sleep(20 + Math.random() * 40)
    await child.append({ type: 'turn/end', data: { turn: t } })
  }
}

await parent.append({ type: 'turn/start', data: { prompt: 'Refactor the storage layer' } })
const plans = [
  { mode: 'continuable' as const, label: 'researcher', turns: 3 },
  { mode: 'one-shot' as const, label: 'test-writer', turns: 2 },
  { mode: 'continuable' as const, label: 'reviewer', turns: 2 },
]
const children: Session[] = []
for (const plan of plans) {
  const child = await parent.spawn({ mode: plan.mode, label: plan.label })
  stops.push(
    child.projections.subscribe('subagentTiming', (t) => {
      if (t) console.log(`  [${plan.label}] turns ${t.turns}, settled ${t.settledMs.toFixed(0)} ms${t.runningSince ? ', running' : ''}`)
    }),
  )
  children.push(child)
}
await Promise.all(children.map((c, i) => runAgent(c, plans[i]!.turns)))
await parent.append({ type: 'turn/end' })
await sleep(10) // the last batched notifications
for (const stop of stops) stop()

console.log('\ntree:')
for (const row of await parent.listChildren({ recursive: true })) {
  const text = row.kind === 'child' ? `${row.label ?? row.id} ${row.mode} ${row.activity}` : `${row.id} (${row.reason})`
  console.log(`  ${'  '.repeat(row.depth)}- ${text}`)
}
const events: string[] = []
for await (const e of parent.events()) events.push(e.type)
console.log(`\nparent log: ${events.join(', ')}`)
await store.close()
