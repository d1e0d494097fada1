// `sessionfold import` checks every line of an export before it opens the store, copying the
// lines to a temporary file (src/cli/transfer.ts, checkImport). A bad line refuses the import
// with INVALID_ARGUMENT and removes that file: also when the refusal comes before the copy's file
// was opened (made so here: its open is held 50 ms), which once left that open to fail on the
// removed folder as an uncaught ENOENT: a crash of the CLI instead of exit 1 (seen once as an
// unhandled error of test/cli/commands.test.ts on a loaded machine).
import { existsSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { PassThrough } from 'node:stream'
import { describe, expect, it, vi } from 'vitest'
import { checkImport } from '../../src/cli/transfer'

// The copy's file opens 50 ms late, as on a busy machine, so that a refusal comes before it is open.
vi.mock('node:fs', async (importOriginal) => {
  const fs = await importOriginal<typeof import('node:fs')>()
  const late = { ...fs, open: ((...args: Parameters<typeof fs.open>) => void setTimeout(() => fs.open(...args), 50)) as typeof fs.open }
  return { ...fs, createWriteStream: (path: string, options?: object) => fs.createWriteStream(path, { ...options, fs: late }) }
})

const io = (input: string) => ({
  stdin: new PassThrough().end(input) as PassThrough,
  stdout: process.stdout,
  stderr: process.stderr,
  interrupted: new Promise<void>(() => {}),
})

const temps = async () => (await readdir(tmpdir())).filter((name) => name.startsWith('sessionfold-import-') && !name.startsWith('sessionfold-import-splice'))

describe('sessionfold import: the check before anything is written', () => {
  it('refuses a bad first line at once with INVALID_ARGUMENT, leaving no temporary file and no error behind', async () => {
    const before = new Set(await temps())
    for (let i = 0; i < 5; i++) {
      await expect(checkImport(io('garbage\n'))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
      await expect(checkImport(io('{"kind":"event","session":"x"}\n'))).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' })
    }
    // Let any open still under way fail now, inside this test, if it would.
    await new Promise((resolve) => setTimeout(resolve, 100))
    expect((await temps()).filter((name) => !before.has(name))).toEqual([])
  })

  it('takes a whole export and hands back its copy, removed by dispose', async () => {
    const header = { version: 1, id: 'a', createdAt: 1, seedLength: 0, delegationDepth: 0, origin: 'root' }
    const lines = [
      { kind: 'session', header, length: 1 },
      { kind: 'event', session: 'a', event: { seq: 0, type: 'x', time: 1, data: null } },
      { kind: 'end', sessions: 1, events: 1 },
    ]
    const checked = await checkImport(io(`${lines.map((l) => JSON.stringify(l)).join('\n')}\n`))
    expect([checked.sessions, checked.events, existsSync(checked.file)]).toEqual([1, 1, true])
    await checked.dispose()
    expect(existsSync(checked.file)).toBe(false)
  })
})
