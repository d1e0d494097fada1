import { createMemoryAdapter } from '../adapters/memory'
import { storageConformance } from './conformance/storage'

storageConformance('memory', async () => ({ adapter: createMemoryAdapter(), teardown: async () => {} }))
