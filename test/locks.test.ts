// One writer per session across Node processes sharing a dir: lock files with the owner's pid.
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { expectCode } from './helpers'

let dir: string
let child: ChildProcess | undefined
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-locks-'))
})
afterEach(async () => {
  child?.kill('SIGKILL')
  await rm(dir, { recursive: true, force: true })
})

async function holder(id: string): Promise<ChildProcess> {
  const p = spawn(process.execPath, ['--import', 'tsx', join(__dirname, 'fixtures/lock-holder.ts'), dir, id], { stdio: ['ignore', 'pipe', 'inherit'] })
  await new Promise<void>((resolve, reject) => {
    p.stdout!.on('data', (d: Buffer) => d.toString().includes('holding') && resolve())
    p.once('exit', (code) => reject(new Error(`holder exited with ${code}`)))
  })
  return p
}

describe('writer locks across processes', () => {
  for (const worker of [false, true]) {
    it(`another process's writer makes openSession SESSION_LOCKED; observe works; a killed owner's lock is taken over (worker: ${worker})`, async () => {
      child = await holder('shared')
      const store = await openStore({ dir, worker })
      await expectCode(store.openSession('shared'), 'SESSION_LOCKED')
      await expectCode(store.deleteSession('shared'), 'SESSION_LOCKED')
      const view = await store.observe('shared')
      const events = []
      for await (const e of view.events()) events.push(e.type)
      expect(events).toEqual(['app/held'])
      const kid = await store.createSession({ id: 'mine' })
      const rows = await kid.spawn({ mode: 'one-shot', id: 'sub' }).then(() => kid.listChildren())
      expect(rows[0]).toMatchObject({ id: 'sub', activity: 'running' })
      child.kill('SIGKILL')
      await new Promise((r) => child!.once('exit', r))
      const s = await store.openSession('shared') // the dead owner's lock is taken over
      await s.append({ type: 'app/mine' })
      await store.close()
    })
  }

  it('listChildren shows a child held by another process as running', async () => {
    const store = await openStore({ dir, worker: false })
    const parent = await store.createSession({ id: 'p' })
    const kid = await parent.spawn({ mode: 'one-shot', id: 'k' })
    await kid.close()
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'inactive' })
    child = await holder('k')
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'running' })
    child.kill('SIGKILL')
    await new Promise((r) => child!.once('exit', r))
    expect((await parent.listChildren())[0]).toMatchObject({ activity: 'inactive' })
    await store.close()
  })
})
