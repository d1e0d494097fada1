// What differs between Node and browsers for an engine host: which storage and locks exist.
// Each platform file imports its adapters statically, so a worker bundle holds only its own.
import type { StorageAdapter } from '../adapters/types'
import type { HostOptions } from '../src/protocol'
import type { WriterLocks } from './locks'

export interface Platform {
  openStorage(options: HostOptions): StorageAdapter
  openLocks(options: HostOptions): WriterLocks
}
