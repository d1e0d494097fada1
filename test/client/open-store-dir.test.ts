// Client: openStore checks an fs store's folder at once (§6 errors): a `dir` that is a file,
// under a file, that cannot be made, or that cannot be written in, rejects openStore itself
// with STORAGE_UNAVAILABLE naming the path, in the default worker and in this thread, and
// leaves everything as it was. Real files; the folders a process cannot write in are the
// kernel's own (/sys, /proc), since chmod does not stop root, which runs these tests.
import { existsSync } from 'node:fs'
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { openStore } from 'sessionfold'
import { expectCode } from '../support/helpers'

let dir: string
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-dir-'))
})
afterEach(async () => {
  await rm(dir, { recursive: true, force: true })
})

const linux = process.platform === 'linux' && existsSync('/sys/kernel')

describe('openStore({ dir }) checks the folder at once', () => {
  for (const worker of [true, false]) {
    describe(worker ? 'default worker' : 'worker: false', () => {
      it('a dir that is a file: STORAGE_UNAVAILABLE from openStore, naming it; the file is untouched', async () => {
        const file = join(dir, 'store')
        await writeFile(file, 'not a store')
        const err = await expectCode(openStore({ dir: file, worker }), 'STORAGE_UNAVAILABLE')
        expect(err.message).toContain(file)
        expect(err.message).toContain('is a file')
        expect(await readFile(file, 'utf8')).toBe('not a store')
        expect(await readdir(dir)).toEqual(['store'])
      })

      it('a dir under a file: STORAGE_UNAVAILABLE, nothing made', async () => {
        await writeFile(join(dir, 'f'), 'x')
        const path = join(dir, 'f', 'store')
        const err = await expectCode(openStore({ dir: path, worker }), 'STORAGE_UNAVAILABLE')
        expect(err.message).toContain(path)
        expect(await readdir(dir)).toEqual(['f'])
      })

      it.runIf(linux)('a folder that cannot be made, or cannot be written in: STORAGE_UNAVAILABLE, naming it', async () => {
        for (const path of ['/sys/kernel/sessionfold-test', '/sys/kernel', '/proc/sessionfold-test']) {
          const err = await expectCode(openStore({ dir: path, worker }), 'STORAGE_UNAVAILABLE')
          expect(err.message).toContain(`the store folder ${path} `)
          expect(existsSync(join(path, 'sessions'))).toBe(false)
        }
      })

      it('a folder that is fine opens, and the check leaves nothing behind in it', async () => {
        const path = join(dir, 'a', 'b')
        const store = await openStore({ dir: path, worker })
        await (await store.createSession({ id: 's' })).append({ type: 'app/e' })
        await store.close()
        expect((await readdir(path)).filter((n) => n.startsWith('.write-check'))).toEqual([])
      })
    })
  }
})
