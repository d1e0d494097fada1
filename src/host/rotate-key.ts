// store.rotateKey, on the engine's side, in steps the client drives (its onProgress stays on
// its side: a function does not cross a worker): start flips the key record to the new key
// (Keyring.rotate), each step re-encrypts the next session in id order while holding that
// session's writer lock, and finish drops the old data keys once every session was walked with
// none left behind. A crash anywhere leaves a store that opens, whole, with the old key (before
// the flip) or the new one (after it): old data keys stay listed until the finish, so every
// unit opens. A rotation that stopped midway (a crash, a session open for writing) is completed
// by running rotateKey again with the new key.
import { SessionfoldError, isSessionfoldError, where } from '../core/errors'
import type { SessionId } from '../core/model'
import type { RotationStart, RotationStep } from '../core/protocol'
import { lockWithin, type OpenedEngine } from './open-engine'

/** How long a step waits for a session's writer lock before leaving that session for a later run. */
export const ROTATION_LOCK_WAIT_MS = 2000

const notReady = () => new SessionfoldError('INVALID_ARGUMENT', 'rotateKey: a step out of turn')

/** A rotation under way on one host. */
export interface KeyRotation {
  /** The data key generation every unit goes under. */
  gen: number
  /** The last session walked. */
  after?: SessionId
  /** Every session was walked. */
  walked: boolean
  /** Sessions left under the old data keys: open for writing elsewhere while walked. */
  locked: SessionId[]
}

export async function startRotation({ storage }: OpenedEngine, key: unknown): Promise<{ rotation: KeyRotation; answer: RotationStart }> {
  const gen = await storage.rotateKey(key as Uint8Array)
  let sessions = 0
  for (let after: SessionId | undefined; ; ) {
    const ids = await storage.listIds({ after, limit: 10_000 })
    sessions += ids.length
    if (ids.length < 10_000) break
    after = ids[ids.length - 1]
  }
  return { rotation: { gen, walked: false, locked: [] }, answer: { sessions } }
}

/** Re-encrypts the next session after the last one walked; `done` when there is none. */
export async function rotationStep({ engine, storage }: OpenedEngine, rotation: KeyRotation | undefined): Promise<RotationStep> {
  if (!rotation) throw notReady()
  const [id] = await storage.listIds({ after: rotation.after, limit: 1 })
  if (id === undefined) {
    rotation.walked = true
    return { done: true, events: 0 }
  }
  rotation.after = id
  let release: () => Promise<void>
  try {
    release = await lockWithin(engine.locks, id, ROTATION_LOCK_WAIT_MS)
  } catch (err) {
    if (!isSessionfoldError(err, 'SESSION_LOCKED')) throw err
    rotation.locked.push(id)
    return { done: false, events: 0, locked: true }
  }
  try {
    const report = await storage.resealSession(id)
    return { done: false, events: report?.events ?? 0 }
  } finally {
    await release()
  }
}

/** Drops the old data keys, once every session was walked and none was left behind. */
export async function finishRotation({ storage }: OpenedEngine, rotation: KeyRotation | undefined): Promise<void> {
  if (!rotation?.walked) throw notReady()
  const [first] = rotation.locked
  if (first !== undefined) {
    throw new SessionfoldError(
      'SESSION_LOCKED',
      `rotateKey: ${where(first)} (of ${rotation.locked.length}) stayed open for writing, under the old key: close it, run rotateKey again`,
      { sessionId: first },
    )
  }
  await storage.dropOldKeys(rotation.gen)
}
