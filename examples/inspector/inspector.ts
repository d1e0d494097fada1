// The sessionfold inspector (`npm run inspector`): open any session of this origin's store (on
// IndexedDB, the engine in a Web Worker), see its subagent tree, its projection values and its
// events, follow it live, and drag the timeline to see all of it as of any point (each position
// is store.observe(id, { at }): one history row restored, a few thousand events folded at most).
// "Fork here" continues from the point shown. Query: ?db= the store's name (default
// 'sessionfold', the browsers' default), ?session= one to open, ?server=&token= a sync server
// to replicate with (its sessions then show up here too).
import { openStore, type ProjectionSnapshot, type SessionView, type SubagentListEntry } from 'sessionfold'
import { EventList } from './event-list'
import { renderTree, renderValues } from './panels'
import { makeSample } from './sample'

const params = new URLSearchParams(location.search)
const $ = <T extends HTMLElement = HTMLElement>(s: string) => document.querySelector<T>(s)!
const db = params.get('db') ?? 'sessionfold'
const store = await openStore({ name: db })
$('#store').textContent = `store "${db}" (IndexedDB)`

const server = params.get('server')
if (server) {
  const token = params.get('token')
  const replication = store.connect(server, { live: true, ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}) })
  const chip = $('#sync')
  chip.hidden = false
  replication.subscribe((s) => {
    chip.className = `chip ${s.status}`
    chip.textContent = `sync ${s.status}${s.pending ? ` · ${s.pending} pending` : ''}`
  })
}

// ---- the session list -------------------------------------------------------------------------

const LISTED = 1000
let current: Current | undefined

async function listSessions(): Promise<void> {
  const headers = await store.listSessions({ limit: LISTED })
  const filter = $<HTMLInputElement>('#filter').value.trim()
  const shown = headers.filter((h) => h.id.includes(filter)).sort((a, b) => b.createdAt - a.createdAt)
  $('#sessions').replaceChildren(
    ...shown.map((h) => {
      const li = document.createElement('li')
      li.dataset.id = h.id
      li.textContent = h.id
      const kind = document.createElement('span')
      kind.className = 'kind'
      kind.textContent = h.origin === 'root' ? '' : h.origin
      li.append(kind)
      li.classList.toggle('current', h.id === current?.id)
      li.addEventListener('click', () => void open(h.id))
      return li
    }),
  )
  $('#sessions-note').textContent =
    headers.length === LISTED ? `the first ${LISTED} sessions by id` : `${headers.length} session${headers.length === 1 ? '' : 's'}`
}
$('#filter').addEventListener('input', () => void listSessions())
setInterval(() => void listSessions(), 2000)

// ---- one session --------------------------------------------------------------------------------

interface Current {
  id: string
  /** Follows the session: its length, its values at the end, and the events list's reads. */
  live: SessionView
  length: number
  at: number
}

const scrub = $<HTMLInputElement>('#scrub')
const follow = $<HTMLInputElement>('#follow')
const events = new EventList($('#events'), $('#events-space'), async (from, to) => {
  const out = []
  for await (const e of current!.live.events({ from, to })) out.push(e)
  return out
})

/** Times from a move of the timeline to the page showing that point (ms), for the curious and the benchmark. */
const scrubTimes: number[] = []
/** The latest position asked for: answers for older ones are dropped. */
let asked = 0
let unsubscribe: (() => void) | undefined

async function open(id: string): Promise<void> {
  unsubscribe?.()
  await current?.live.close()
  const live = await store.observe(id)
  const length = live.projections.asOfSeq + 1
  current = { id, live, length, at: length }
  $('#empty').hidden = true
  $('#session').hidden = false
  $('#title').textContent = id
  $('#origin').textContent =
    live.header.origin === 'root' ? 'root' : `${live.header.origin}${live.header.parentSession ? ` of ${live.header.parentSession}` : ''}`
  history.replaceState(null, '', `?${new URLSearchParams({ ...Object.fromEntries(params), session: id })}`)
  follow.checked = true
  events.reset(length, length)
  setLength(length)
  message()
  await show(length, performance.now())
  let tree = 0
  unsubscribe = live.projections.subscribe(() => {
    const c = current
    if (!c || c.live !== live) return
    const grown = live.projections.asOfSeq + 1
    if (grown === c.length) return
    setLength(grown)
    events.grow(grown)
    if (!follow.checked) return
    // Following: the values at the end come with the push; the tree is asked for at most every 250 ms.
    c.at = grown
    scrub.value = String(grown)
    paint(grown, live.projections.snapshot())
    if (!tree) tree = window.setTimeout(() => void children(live, grown).finally(() => (tree = 0)), 250)
  })
  void listSessions()
}

function setLength(length: number): void {
  current!.length = length
  scrub.max = String(length)
  $('#event-count').textContent = `${length.toLocaleString('en')}`
}

/** Shows the session as of `at`: the live values at the end, else a view as of that point. */
async function show(at: number, started: number): Promise<void> {
  const c = current!
  const ticket = ++asked
  c.at = at
  let snapshot: ProjectionSnapshot
  let rows: SubagentListEntry[]
  if (at === c.length) {
    snapshot = c.live.projections.snapshot()
    rows = await c.live.listChildren({ recursive: true })
  } else {
    const then = await store.observe(c.id, { at })
    snapshot = then.projections.snapshot()
    rows = await then.listChildren({ recursive: true })
  }
  if (ticket !== asked || current !== c) return // a later move, or another session: not this one
  paint(at, snapshot)
  renderTree($('#tree'), rows)
  $('#tree-count').textContent = String(rows.length)
  scrubTimes.push(performance.now() - started)
  document.body.dataset.shown = String(at)
}

function paint(at: number, snapshot: ProjectionSnapshot): void {
  const c = current!
  renderValues($('#values'), snapshot)
  $('#as-of').textContent = at === 0 ? 'before any event' : `after seq ${at - 1}`
  $('#position').innerHTML = `<b>${at.toLocaleString('en')}</b> of ${c.length.toLocaleString('en')} events${at === c.length ? ' · now' : ''}`
  events.setAt(at, true)
}

async function children(live: SessionView, at: number): Promise<void> {
  const rows = await live.listChildren({ recursive: true })
  if (current?.live === live && current.at === at) renderTree($('#tree'), rows)
}

// The timeline: each move shows that point; one frame's moves are one read.
let pending: { at: number; started: number } | undefined
scrub.addEventListener('input', () => {
  const at = Number(scrub.value)
  follow.checked = at === current?.length
  if (!pending) {
    requestAnimationFrame(() => {
      const p = pending!
      pending = undefined
      void show(p.at, p.started).catch((err: unknown) => message(String((err as Error).message ?? err), true))
    })
  }
  pending = { at, started: pending?.started ?? performance.now() }
})
follow.addEventListener('change', () => {
  if (follow.checked && current) {
    scrub.value = String(current.length)
    void show(current.length, performance.now())
  }
})

$('#fork').addEventListener(
  'click',
  () =>
    void (async () => {
      const c = current
      if (!c) return
      try {
        // A fork needs its source open for writing (briefly): SESSION_LOCKED while another writer has it.
        const source = await store.openSession(c.id)
        const fork = await source.fork({ at: c.at, id: `${c.id.slice(0, 100)}-fork-${Date.now().toString(36)}` })
        await source.close()
        await fork.close()
        await open(fork.id)
        message(`Forked at ${c.at}: ${fork.id} continues from there.`)
      } catch (err) {
        const e = err as { code?: string; message?: string }
        message(
          e.code === 'SESSION_LOCKED'
            ? `${c.id} is open for writing elsewhere; fork it from that writer, or once it is closed.`
            : `Fork failed: ${e.message ?? err}`,
          true,
        )
      }
    })(),
)

$('#seed').addEventListener(
  'click',
  () =>
    void (async () => {
      $<HTMLButtonElement>('#seed').disabled = true
      try {
        await open(await makeSample(store, Number(params.get('events') ?? 5000)))
      } finally {
        $<HTMLButtonElement>('#seed').disabled = false
      }
    })(),
)

function message(text?: string, bad = false): void {
  const p = $('#message')
  p.hidden = !text
  p.textContent = text ?? ''
  p.classList.toggle('bad', bad)
}

await listSessions()
const first = params.get('session')
if (first) await open(first).catch((err: unknown) => message(String((err as Error).message ?? err), true))

/** Moves the timeline to `at` as a person would, and resolves with the time until the page showed it (ms). */
async function scrubTo(at: number): Promise<number> {
  const before = scrubTimes.length
  scrub.value = String(at)
  scrub.dispatchEvent(new Event('input'))
  while (scrubTimes.length === before || document.body.dataset.shown !== String(at)) await new Promise((r) => setTimeout(r, 1))
  return scrubTimes.at(-1)!
}

// For tests, benchmarks and the curious.
Object.assign(window, {
  inspector: {
    store,
    open,
    scrubTo,
    scrubTimes,
    makeSample: (n: number) => makeSample(store, n),
    get current() {
      return current
    },
  },
})
document.body.dataset.ready = 'true'
