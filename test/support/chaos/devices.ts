// The chaos run's devices: two fs stores (the engine in its default worker) and one IndexedDB
// store (fake-indexeddb, so in this thread), each connected live to the server through its own
// port of the fault proxy. A device keeps every conflict any of its replications reported (but
// those a replication withdrew, having found nothing to move), and counts how its replications fared.
import 'fake-indexeddb/auto'
import { join } from 'node:path'
import { openStore, type Replication, type ReplicationState, type Store, type SyncConflict } from '../../../src/index-node'

export type DeviceKind = 'fs' | 'indexeddb'

export class Device {
  /** Every conflict reported by any replication of this device, once each. */
  readonly conflicts = new Map<string, SyncConflict>()
  /** Error codes its replications reported while offline or refused, with how often. */
  readonly errors = new Map<string, number>()
  connects = 0
  #replication: Replication | undefined
  #off: (() => void) | undefined
  #last: ReplicationState | undefined

  private constructor(
    readonly name: string,
    readonly kind: DeviceKind,
    readonly store: Store,
    private readonly url: string,
  ) {}

  static async open(name: string, kind: DeviceKind, temp: string, url: string): Promise<Device> {
    const store =
      kind === 'fs'
        ? await openStore({ dir: join(temp, name) })
        : await openStore({ storage: 'indexeddb', name: `chaos-${name}-${process.pid}-${Date.now()}`, worker: false })
    return new Device(name, kind, store, url)
  }

  get connected(): boolean {
    return this.#replication !== undefined
  }

  /** The state of its replication now (undefined while it has none). */
  get state(): ReplicationState | undefined {
    return this.#replication ? this.#last : undefined
  }

  get replication(): Replication | undefined {
    return this.#replication
  }

  connect(): void {
    if (this.#replication) return
    this.connects++
    const r = this.store.connect(this.url, { live: true, headers: { authorization: 'Bearer user1' }, pollMs: 100, maxBackoffMs: 1500 })
    this.#replication = r
    let lastError: string | undefined
    /** Conflicts this replication listed: one it no longer lists, unresolved, was withdrawn (nothing to move). */
    const listed = new Set<string>()
    this.#off = r.subscribe((state) => {
      this.#last = state
      const now = new Set<string>()
      for (const c of state.conflicts) {
        const key = `${c.id} ${c.seq} ${c.reason}`
        now.add(key)
        listed.add(key)
        if (!this.conflicts.get(key)?.forkedAs || c.forkedAs) this.conflicts.set(key, c)
      }
      for (const key of listed) {
        if (now.has(key)) continue
        listed.delete(key)
        if (!this.conflicts.get(key)?.forkedAs) this.conflicts.delete(key)
      }
      const code = state.error?.code
      if (code !== undefined && code !== lastError) this.errors.set(code, (this.errors.get(code) ?? 0) + 1)
      lastError = code
    })
  }

  async disconnect(): Promise<void> {
    const r = this.#replication
    if (!r) return
    this.#replication = undefined
    this.#off?.()
    await r.close()
  }

  async close(): Promise<void> {
    await this.disconnect()
    await this.store.close()
  }
}
