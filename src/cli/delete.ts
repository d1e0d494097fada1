// `sessionfold delete <id>... [--tree]`: deletes sessions, all or none (the engine's
// deleteSessions, src/engine/delete-tree.ts). Every named session must exist and none of them
// (nor, with --tree, any descendant) may be open for writing by anyone: the writer lock of
// every session to delete is taken before the first is deleted, so no writer can open one,
// append to it or spawn under it meanwhile, and all are held until it is done.
import type { SessionId } from '../core/model'
import type { Engine } from '../engine'
import type { Output } from './output'

export async function deleteSessions(engine: Engine, out: Output, ids: SessionId[], tree: boolean): Promise<number> {
  const deleted = await engine.deleteSessions(ids, { tree, mustExist: true })
  if (out.json) await out.value({ deleted })
  else await out.line(`deleted ${deleted.length} session${deleted.length === 1 ? '' : 's'}: ${deleted.join(', ')}`)
  return 0
}
