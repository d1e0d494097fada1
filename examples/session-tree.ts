// examples/session-tree.ts
import { openStore } from 'sessionfold'

const [id] = process.argv.slice(2)
if (!id) throw new Error('usage: session-tree <session id>')
const store = await openStore({ dir: process.env.SESSIONFOLD_DIR ?? '.sessionfold' })
const view = await store.observe(id) // read-only: works while an app writes to it
for (const row of await view.listChildren({ recursive: true })) {
  const indent = '  '.repeat(row.depth)
  if (row.kind === 'child') console.log(`${indent}${row.label ?? row.id} [${row.mode}] ${row.activity}`)
  else console.log(`${indent}${row.id} !${row.reason}`)
}
await store.close()
