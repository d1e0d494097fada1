// examples/encrypted-store.ts
import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { deriveKey, openStore } from 'sessionfold'

const dir = process.env.SESSIONFOLD_DIR ?? '.sessionfold-secret'
const passphrase = process.env.SESSIONFOLD_PASSPHRASE ?? 'correct horse battery staple'
// The salt is not secret: keep it beside the store (made once, 16 random bytes).
const saltFile = `${dir}.salt`
const salt = await readFile(saltFile).catch(async () => {
  const fresh = crypto.getRandomValues(new Uint8Array(16))
  await writeFile(saltFile, fresh)
  return fresh
})
const key = await deriveKey(passphrase, new Uint8Array(salt)) // PBKDF2-SHA-256, 600,000 iterations

const store = await openStore({ dir, encryption: { key } }) // a wrong key: KEY_REJECTED
const session = await store.createSession({ cwd: '/home/me/project' })
await session.append({ type: 'tool/output', data: { text: 'OPENAI_API_KEY=sk-not-a-real-key' } })
console.log(`${session.id}: ${session.projections.snapshot().asOfSeq + 1} events, sealed on disk`)

await store.close()

// Nothing of it is readable in the store's files:
const files = (await readdir(dir, { recursive: true, withFileTypes: true })).filter((f) => f.isFile())
const leaks = []
for (const f of files) if ((await readFile(join(f.parentPath, f.name), 'latin1')).includes('sk-not-a-real-key')) leaks.push(f.name)
console.log(leaks.length === 0 ? `no plaintext in ${files.length} files` : `plaintext in ${leaks.join(', ')}!`)
