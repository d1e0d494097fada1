// Contract: §2 data model, §4 checkpoints — the storage suite on the memory adapter (docs/CONTRACT.md)
import { createMemoryAdapter } from '../../src/backends/memory'
import { storageConformance } from 'sessionfold/testing'

storageConformance('memory', async () => ({ adapter: createMemoryAdapter(), teardown: async () => {} }))
