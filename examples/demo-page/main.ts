// The demo page (`npm run demo:page`): a simulated agent on IndexedDB, the engine in a module
// Web Worker, and a live session tree. The tree comes from listChildren({ recursive: true }),
// refreshed when a catalog changes; each row's timing is bound to that session's
// subagentTiming with bindText.
import { bindText, openStore, type Session, type SessionView, type TimingView } from 'sessionfold'

const status = document.querySelector<HTMLElement>('#status')!
const tbody = document.querySelector<HTMLTableSectionElement>('#tree tbody')!

const store = await openStore({ name: 'demo-page' })

// ---- the tree --------------------------------------------------------------------------------

interface TreeRow {
  id: string
  depth: number
  kind: 'root' | 'fork' | 'child' | 'diagnostic'
  label: string
  mode: string
  activity: string
}

/** Top-level sessions shown (the root, later its fork), and whether this page still writes to them. */
const tops: { id: string; kind: 'root' | 'fork'; label: string; open: boolean }[] = []
/** One read-only view per session shown: it feeds its row's timing and watches its catalog. */
const views = new Map<string, Promise<SessionView>>()
const rows = new Map<string, HTMLTableRowElement>()

function observe(id: string): Promise<SessionView> {
  let view = views.get(id)
  if (!view) {
    view = store.observe(id)
    void view.then((v) => {
      let first = true // subscribe delivers the current value at once: not news
      v.projections.subscribe('subagentCatalog', () => (first ? (first = false) : refresh()))
    })
    views.set(id, view)
  }
  return view
}

const formatTiming = (t: TimingView | null): string =>
  t === null ? '–' : `${t.turns} ${t.turns === 1 ? 'turn' : 'turns'} · ${Math.round(t.settledMs)} ms${t.runningSince !== null ? ' · in a turn' : ''}`

function cell(tr: HTMLTableRowElement, className: string): HTMLTableCellElement {
  const td = tr.insertCell()
  td.className = className
  return td
}

function rowFor(r: TreeRow): HTMLTableRowElement {
  let tr = rows.get(r.id)
  if (!tr) {
    tr = document.createElement('tr')
    tr.dataset.id = r.id
    cell(tr, 'label')
    cell(tr, 'mode')
    cell(tr, 'activity')
    const timing = cell(tr, 'timing')
    if (r.kind !== 'diagnostic') void observe(r.id).then((v) => bindText(timing, v, 'subagentTiming', formatTiming))
    rows.set(r.id, tr)
  }
  const [label, mode, activity] = [...tr.cells]
  Object.assign(tr.dataset, { kind: r.kind, depth: String(r.depth), mode: r.mode, activity: r.activity })
  label!.textContent = `${r.depth > 0 ? '└ ' : ''}${r.label}`
  label!.style.paddingLeft = `${0.75 + r.depth * 1.5}rem`
  mode!.textContent = r.mode
  activity!.textContent = r.activity
  activity!.className = `activity activity-${r.activity}${r.kind === 'diagnostic' ? ' diagnostic' : ''}`
  return tr
}

async function readTree(): Promise<TreeRow[]> {
  const out: TreeRow[] = []
  for (const top of tops) {
    out.push({ id: top.id, depth: 0, kind: top.kind, label: top.label, mode: top.kind, activity: top.open ? 'running' : 'inactive' })
    const view = await observe(top.id)
    for (const row of await view.listChildren({ recursive: true })) {
      out.push(
        row.kind === 'child'
          ? { id: row.id, depth: row.depth + 1, kind: 'child', label: row.label ?? row.id.slice(0, 8), mode: row.mode, activity: row.activity }
          : { id: row.id, depth: row.depth + 1, kind: 'diagnostic', label: row.id.slice(0, 8), mode: '?', activity: row.reason },
      )
    }
  }
  return out
}

let stale = false
let loop: Promise<void> | undefined
/** Re-reads the tree (again if something changed meanwhile); resolves once the rows are current. */
function refresh(): Promise<void> {
  stale = true
  loop ??= (async () => {
    try {
      while (stale) {
        stale = false
        const tree = await readTree()
        tbody.replaceChildren(...tree.map(rowFor))
        tbody.dataset.rows = String(tree.length)
      }
    } catch (err) {
      fail(err)
    } finally {
      loop = undefined
    }
  })()
  return loop
}

// ---- the simulated agent ---------------------------------------------------------------------

const sleep = (min: number, max: number) => new Promise((r) => setTimeout(r, min + Math.random() * (max - min)))

async function runTurns(s: Session, turns: number, what: string): Promise<void> {
  for (let t = 1; t <= turns; t++) {
    await s.append({ type: 'turn/start', data: { turn: t } })
    await sleep(20, 90)
    await s.append({ type: 'agent/message', data: { text: `${what}: step ${t}` } })
    await sleep(20, 90)
    await s.append({ type: 'turn/end', data: { turn: t } })
  }
}

/** A one-shot subagent: spawned, runs, closes (inactive from then on). */
async function oneShot(parent: Session, label: string | undefined, turns: number, work?: (s: Session) => Promise<void>): Promise<void> {
  const child = await parent.spawn(label === undefined ? { mode: 'one-shot' } : { mode: 'one-shot', label })
  await runTurns(child, turns, label ?? 'one-shot')
  await work?.(child)
  await child.close()
  void refresh() // a writer closed: activity is no catalog change
}

/** A continuable subagent: it stays open (running) for more work later. */
async function continuable(parent: Session, label: string, turns: number, work?: (s: Session) => Promise<void>): Promise<Session> {
  const child = await parent.spawn({ mode: 'continuable', label })
  await runTurns(child, turns, label)
  await work?.(child)
  return child
}

function fail(err: unknown): void {
  console.error(err)
  status.className = 'error'
  status.textContent = `failed: ${err instanceof Error ? err.message : String(err)}`
  document.body.dataset.state = 'failed'
}

async function simulate(): Promise<void> {
  const root = await store.createSession()
  tops.push({ id: root.id, kind: 'root', label: `agent ${root.id.slice(0, 8)}`, open: true })
  status.textContent = `session ${root.id}: running…`
  document.body.dataset.state = 'running'
  void refresh()

  await root.append({ type: 'turn/start', data: { prompt: 'Refactor the storage layer' } })
  // The shape examples/chat-app gives user/message (its EventMap entry types it repo-wide).
  await root.append({ type: 'user/message', data: { text: 'Refactor the storage layer, keep the tests green', format: 'plain' } })
  await Promise.all([
    continuable(root, 'planner', 2, (planner) =>
      Promise.all([continuable(planner, 'coder', 3, (coder) => oneShot(coder, 'grep', 1)), oneShot(planner, 'test-run', 2)]).then(() => {}),
    ),
    continuable(root, 'researcher', 2, (researcher) => oneShot(researcher, undefined, 1)),
    oneShot(root, 'lint', 1),
  ])

  // Try another approach from the point where the children had been asked for.
  const fork = await root.fork({ at: 2 })
  tops.push({ id: fork.id, kind: 'fork', label: `fork ${fork.id.slice(0, 8)} @ seq ${fork.header.seedLength}`, open: true })
  void refresh()
  await runTurns(fork, 1, 'fork')
  await oneShot(fork, 'alt-lint', 1)
  await fork.close()
  tops[1]!.open = false

  await root.append({ type: 'turn/end' })
  await refresh()
  status.textContent = `session ${root.id}: done. The continuable subagents stay open (running); one-shots closed.`
  document.body.dataset.state = 'done'
}

simulate().catch(fail)
