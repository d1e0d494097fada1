// examples/testing-an-adapter/my-adapter.test.ts
// The storage conformance suite on an adapter. The memory adapter stands in for yours: put your
// own create function where createMemoryAdapter() is.
import { createMemoryAdapter } from 'sessionfold/adapters/memory'
import { storageConformance } from 'sessionfold/testing'

storageConformance('my adapter', async () => {
  const adapter = createMemoryAdapter()
  return {
    adapter,
    // Memory keeps nothing past close(): no reopen, so the durability test is reported skipped.
    teardown: () => adapter.close(),
  }
})
