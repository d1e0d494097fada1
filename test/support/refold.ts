// Support: fullRefold(), what every live or cold projection value is checked against (§4 cold reads)
// The values a full refold of a stored log gives, computed from storage without any
// checkpoint: what every live or cold projection must equal.
import type { StorageAdapter } from '../../src/storage/types'
import type { SessionId } from '../../src/core/model'
import type { ProjectionDefinition, ProjectionSnapshot } from '../../src/core/projection'
import { BUILTIN_PROJECTIONS } from '../../src/core/units'
import { foldEvent, initSlots, snapshotOf } from '../../src/engine/units'
import { readAll } from './helpers'

export async function fullRefold(storage: StorageAdapter, id: SessionId, defs: readonly ProjectionDefinition[] = []): Promise<ProjectionSnapshot> {
  const info = await storage.getSession(id)
  if (!info) throw new Error(`refold: session ${id} does not exist`)
  const slots = initSlots([...BUILTIN_PROJECTIONS, ...defs], info.header)
  for (const e of await readAll(storage, id)) foldEvent(slots, e)
  return snapshotOf(slots, info.length - 1)
}
