import { it, expect } from 'vitest'
import { cdp } from 'vitest/browser'
import { openStore } from 'sessionfold'

it('probe', async () => {
  const est = await navigator.storage.estimate()
  console.log('estimate', JSON.stringify(est), location.origin)
  const r = await cdp().send('Storage.overrideQuotaForOrigin', { origin: location.origin, quotaSize: (est.usage ?? 0) + 300_000 })
  console.log('override', JSON.stringify(r), JSON.stringify(await navigator.storage.estimate()))
  const store = await openStore({ name: `probe-${Date.now()}` })
  const s = await store.createSession({ id: 's' })
  let n = 0
  try {
    for (; n < 200; n++) await s.append({ type: 'big', data: 'x'.repeat(50_000) })
  } catch (e) {
    console.log('failed at', n, (e as any).code, (e as Error).message)
  }
  console.log('after', JSON.stringify(await navigator.storage.estimate()))
  await cdp().send('Storage.overrideQuotaForOrigin', { origin: location.origin })
  await s.append({ type: 'big', data: 'x' })
  await store.close()
  expect(1).toBe(1)
})
