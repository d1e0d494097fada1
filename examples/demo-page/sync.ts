// The sync demo page (`npm run demo:sync`): one device, its store on IndexedDB (the engine in a
// Web Worker), connected live to the sync server of examples/sync-server.ts. Its query says
// which device it is (?device=a: database sync-demo-a), where the server is (?server=, and
// ?control= for the away/back buttons) and whose token it holds (?token=user1). Deleting a
// session here deletes it on the server and on every other device (DESIGN §15). Writing to one
// session on two devices while the server is away is a conflict once it is back: the device
// that comes second keeps its events in a fork of the session, which every device then shows.
import { openStore, type ReplicationState, type Session, type SessionView } from 'sessionfold'

const params = new URLSearchParams(location.search)
const device = params.get('device') ?? 'a'
const serverUrl = params.get('server') ?? 'http://127.0.0.1:8787/sync'
const control = params.get('control') ?? 'http://127.0.0.1:8788'
const token = params.get('token') ?? 'user1'
const prefix = `u${token.replace(/^user/, '')}-`

const $ = <T extends HTMLElement>(s: string) => document.querySelector<T>(s)!
$('#device').textContent = `device ${device.toUpperCase()}`
$('#server').textContent = `server: ${serverUrl}`

const store = await openStore({ name: `sync-demo-${device}` })
// A function: called before each request, as an app would fetch a fresh token.
const replication = store.connect(serverUrl, { headers: () => ({ authorization: `Bearer ${token}` }), live: true })

function render(state: ReplicationState): void {
  const badge = $('#sync')
  badge.dataset.status = state.status
  badge.textContent = state.status
  const parts = [`${state.pending} pending`, `${state.pushed} pushed`, `${state.pulled} pulled`]
  if (state.error) parts.push(state.error.message)
  // The next try (the browser's online event brings it forward).
  if (state.retryAt !== undefined) parts.push(`retrying in ${Math.max(0, Math.ceil((state.retryAt - Date.now()) / 1000))} s`)
  $('#detail').textContent = parts.join(' · ')
  const conflicts = $('#conflicts')
  conflicts.hidden = state.conflicts.length === 0
  conflicts.textContent = state.conflicts
    .map((c) =>
      c.forkedAs
        ? `${c.id} was written on another device too: this device's events from seq ${c.seq} are now in ${c.forkedAs}`
        : `conflict in ${c.id} at seq ${c.seq} (${c.reason}): its events here move to a fork once it is not open for writing`,
    )
    .join('; ')
}
replication.subscribe(render)
setInterval(() => {
  if (replication.state.retryAt !== undefined) render(replication.state)
}, 1000)

// ---- sessions ---------------------------------------------------------------------------------

/** Sessions this page writes (made here), newest last. */
const mine: Session[] = []
/** A read-only view per session shown, whose snapshot gives the row its count. */
const views = new Map<string, SessionView>()

async function refresh(): Promise<void> {
  const headers = await store.listSessions({ limit: 1000 })
  const tbody = $<HTMLTableSectionElement>('#sessions tbody')
  // Sessions deleted (here, or on another device and then here by the replication) leave the table.
  const there = new Set(headers.map((h) => h.id))
  for (const [id, view] of views) {
    if (there.has(id)) continue
    views.delete(id)
    void view.close().catch(() => {})
  }
  for (const h of headers) {
    let view = views.get(h.id)
    if (!view) {
      view = await store.observe(h.id)
      views.set(h.id, view)
      view.projections.subscribe(() => void paint(tbody))
    }
  }
  paint(tbody)
}

function paint(tbody: HTMLTableSectionElement): void {
  const rows = [...views.values()].sort((a, b) => a.header.createdAt - b.header.createdAt)
  tbody.replaceChildren(
    ...rows.map((v) => {
      const tr = document.createElement('tr')
      tr.dataset.id = v.id
      const origin = v.header.forkedFrom ? `fork of ${v.header.forkedFrom} at seq ${v.header.seedLength}` : ''
      const cells = [v.id, (v.id.split('-')[1] ?? '?').toUpperCase(), String(v.projections.snapshot().asOfSeq + 1), origin]
      for (const [i, text] of cells.entries()) {
        const td = tr.insertCell()
        td.className = ['id', 'device', 'n', 'from'][i]!
        td.textContent = text
      }
      const write = document.createElement('button')
      write.className = 'write'
      write.textContent = 'Write here'
      write.addEventListener('click', () => void writeHere(v.id))
      const remove = document.createElement('button')
      remove.className = 'delete'
      remove.textContent = 'Delete everywhere'
      remove.addEventListener('click', () => void deleteEverywhere(v.id))
      const actions = tr.insertCell()
      actions.className = 'actions'
      actions.append(write, ' ', remove)
      return tr
    }),
  )
}

/** Appends a note to the session on this device (open for writing just for it, so that a conflict's fork need not wait). */
async function writeHere(id: string): Promise<void> {
  const writing = mine.findIndex((s) => s.id === id)
  if (writing >= 0) await mine.splice(writing, 1)[0]!.close()
  const session = await store.openSession(id)
  try {
    await session.append({ type: 'demo/note', data: { from: device, at: new Date().toISOString() } })
  } finally {
    await session.close()
  }
}

/** Deletes a session and its subagents here; the replication takes the delete to the server and the other devices. */
async function deleteEverywhere(id: string): Promise<void> {
  const writing = mine.findIndex((s) => s.id === id)
  if (writing >= 0) await mine.splice(writing, 1)[0]!.close() // open for writing here: let go first
  await store.deleteSession(id, { tree: true })
  await refresh()
}

let made = 0
$('#new').addEventListener(
  'click',
  () =>
    void (async () => {
      const session = await store.createSession({ id: `${prefix}${device}-${Date.now().toString(36)}-${made++}` })
      await session.append({ type: 'demo/hello', data: { from: device, at: new Date().toISOString() } })
      mine.push(session)
      await refresh()
    })(),
)
$('#append').addEventListener(
  'click',
  () =>
    void (async () => {
      const session = mine.at(-1)
      if (!session) return
      await session.append({ type: 'demo/more', data: { from: device } })
    })(),
)
$('#away').addEventListener('click', () => void fetch(`${control}/away`, { method: 'POST' }))
$('#back').addEventListener('click', () => void fetch(`${control}/back`, { method: 'POST' }))

// New sessions arrive from the server at any time: list again now and then (a listing is cheap).
await refresh()
setInterval(() => void refresh(), 500)

// For tests and the curious: the page's store and replication.
Object.assign(window, { demo: { store, replication, mine, refresh } })
