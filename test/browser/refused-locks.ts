// Fixture: Web Locks that refuse the requests named `sessionfold:<kind>:…`, as an opaque origin
// refuses every one (SecurityError) (refused-locks.browser.test.ts, refused-locks-worker.ts).
export function refuseLocks(kinds: readonly string[]): () => void {
  const locks = navigator.locks
  const request = locks.request.bind(locks) as (...args: unknown[]) => Promise<unknown>
  locks.request = ((name: string, ...rest: unknown[]) =>
    kinds.some((k) => name.startsWith(`sessionfold:${k}:`))
      ? Promise.reject(new DOMException(`the lock ${name} is refused`, 'SecurityError'))
      : request(name, ...rest)) as LockManager['request']
  return () => void delete (locks as { request?: unknown }).request
}
