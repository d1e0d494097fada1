// What the bench pages (bench/*/page.ts, in Chromium) share: the warnings and errors the page
// logs, kept for the run's report, and an IndexedDB database's deletion.

/** Every console.warn and console.error of the page from now on ("warn: …", "error: …"), still logged too. */
export function keepWarnings(): string[] {
  const warnings: string[] = []
  for (const level of ['warn', 'error'] as const) {
    const original = console[level].bind(console)
    console[level] = (...args: unknown[]) => {
      warnings.push(`${level}: ${args.map(String).join(' ')}`)
      original(...args)
    }
  }
  return warnings
}

/** Deletes IndexedDB database `name`. 'blocked' (a connection closing: a worker ending, a transaction finishing) needs nothing: the delete waits for it. */
export function deleteDatabase(name: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const req = indexedDB.deleteDatabase(name)
    req.onsuccess = () => resolve()
    req.onerror = () => reject(req.error)
  })
}
