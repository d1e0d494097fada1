// Work on many items, a few at a time: an import's entries and its groups of new sessions
// (src/engine/apply-changes.ts), the file adapter's new sessions (src/backends/fs/adapter.ts).

/**
 * Runs `work` on each item, `width` at a time. A failure stops new items from starting and is
 * thrown once those under way have ended (the first failing item's, in order): nothing is left
 * running behind the call.
 */
export async function inTurns<T>(items: readonly T[], width: number, work: (item: T, at: number) => Promise<void>): Promise<void> {
  const failures: { at: number; err: unknown }[] = []
  let next = 0
  const worker = async () => {
    while (failures.length === 0 && next < items.length) {
      const at = next++
      try {
        await work(items[at]!, at)
      } catch (err) {
        failures.push({ at, err })
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker))
  if (failures.length > 0) throw failures.sort((a, b) => a.at - b.at)[0]!.err
}
