// PostgreSQL: the throwaway cluster the PostgreSQL tests run on (test/support/postgres.ts) starts on
// 127.0.0.1, makes databases, stops and starts again on the same data, and is removed after.
import { it, expect } from 'vitest'
import { startCluster } from '../support/postgres'
it('starts, stops, restarts, removes', async () => {
  const c = await startCluster({ settings: { fsync: 'off' } })
  try {
    const url = await c.createDatabase('t1')
    expect(url).toContain('/t1')
    expect(await c.psql('select 1+1')).toBe('2')
    await c.stopServer()
    await c.startServer()
    expect(await c.psql('select 2+2')).toBe('4')
  } finally {
    await c.stop()
  }
}, 60_000)
