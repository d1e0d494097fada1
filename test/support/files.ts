// Every file under a folder with a hash of its bytes: what "nothing was written" compares (Node only).
import { createHash } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'

/** Every file under `root`, by path, with a hash of its bytes. */
export async function filesOf(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue
    const path = join(entry.parentPath, entry.name)
    out[path.slice(root.length)] = createHash('sha256')
      .update(await readFile(path))
      .digest('hex')
  }
  return out
}
