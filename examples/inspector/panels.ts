// The inspector's tree and values panes: plain DOM from a listChildren answer and a snapshot.
import type { ProjectionSnapshot, SubagentListEntry } from 'sessionfold'

/** The subagent tree, pre-order rows indented by depth. */
export function renderTree(list: HTMLElement, rows: readonly SubagentListEntry[]): void {
  list.replaceChildren(
    ...rows.map((r) => {
      const li = document.createElement('li')
      li.style.paddingLeft = `${r.depth * 1.1}rem`
      li.dataset.id = r.id
      const parts: [string, string][] = [['id', `${r.depth > 0 ? '└ ' : ''}${r.id}`]]
      if (r.kind === 'diagnostic') parts.push(['diag', `! ${r.reason}`])
      else {
        parts.push(['mode', r.mode])
        if (r.label !== undefined) parts.push(['label', JSON.stringify(r.label)])
        if (r.activity === 'running') parts.push(['running', '● running'])
      }
      for (const [cls, text] of parts) {
        const span = document.createElement('span')
        span.className = cls
        span.textContent = text
        li.append(span)
      }
      return li
    }),
  )
  if (rows.length === 0) {
    const li = document.createElement('li')
    li.className = 'muted'
    li.textContent = 'no subagents at this point'
    list.append(li)
  }
}

/** Each projection's value as JSON, with its fault when it stopped folding. */
export function renderValues(box: HTMLElement, snapshot: ProjectionSnapshot): void {
  const units = Object.keys(snapshot.values).sort()
  box.replaceChildren(
    ...units.map((key) => {
      const div = document.createElement('div')
      div.className = 'unit'
      div.dataset.key = key
      const name = document.createElement('span')
      name.className = 'key'
      name.textContent = key
      div.append(name)
      const fault = (snapshot.faults as Record<string, string | undefined>)[key]
      if (fault) {
        const f = document.createElement('span')
        f.className = 'fault'
        f.textContent = `fault: ${fault}`
        div.append(f)
      }
      const pre = document.createElement('pre')
      pre.textContent = JSON.stringify(snapshot.values[key], null, 2)
      div.append(pre)
      return div
    }),
  )
}
