// Contract: §8 command line, §12 encryption — an encrypted store without its key: exit 1, KEY_REJECTED in the command line's own terms, nothing written (docs/CONTRACT.md)
// Every command (the read-only ones, and import and delete, which write) run on an encrypted
// fs store with no key given: it exits with 1, and its message says how a command line gives
// a key (--key-file <path>, SESSIONFOLD_KEY), not the API's `encryption: { key }`, which API
// users still get. A key given for a plain store says which of the two to drop. The store's
// files are byte for byte as they were. Most runs go through main() in this process; one runs
// the executable.
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { runCli } from '../support/run-cli'
import { openStore } from 'sessionfold'
import { expectCode } from '../support/helpers'

const root = new URL('../..', import.meta.url).pathname
const key = new Uint8Array(32).fill(7)
const hex = Buffer.from(key).toString('hex')

let dir: string
let sealed: string
let plain: string
let exported: string
let savedEnv: string | undefined

/** Runs a command in this process with SESSIONFOLD_KEY as given (unset when undefined). */
const run = (args: string[], options: { env?: string; stdin?: string } = {}) => runCli(args, { stdin: options.stdin, key: options.env })

/** Every file and folder under `path`: content hash, size and mtime. */
async function files(path: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {}
  for (const name of (await readdir(path, { recursive: true })).sort()) {
    const st = await stat(join(path, name))
    out[name] = st.isFile()
      ? `${createHash('sha256')
          .update(await readFile(join(path, name)))
          .digest('hex')} ${st.size}@${st.mtimeMs}`
      : `dir@${st.mtimeMs}`
  }
  return out
}

beforeAll(async () => {
  savedEnv = process.env.SESSIONFOLD_KEY
  dir = await mkdtemp(join(tmpdir(), 'sessionfold-cli-key-'))
  sealed = join(dir, 'sealed')
  plain = join(dir, 'plain')
  for (const [where, encryption] of [
    [sealed, { key }],
    [plain, undefined],
  ] as const) {
    const s = await openStore({ dir: where, worker: false, ...(encryption ? { encryption } : {}) })
    const parent = await s.createSession({ id: 'root' })
    await parent.append([{ type: 'turn/start' }, { type: 'app/msg', data: 'secret words' }, { type: 'turn/end' }])
    await parent.spawn({ mode: 'one-shot', id: 'kid', events: [{ type: 'app/task' }] })
    await s.close()
  }
  const made = await run(['export', 'root', '--dir', sealed], { env: hex })
  expect(made.code, made.err).toBe(0)
  exported = made.out
})

afterAll(async () => {
  if (savedEnv === undefined) delete process.env.SESSIONFOLD_KEY
  else process.env.SESSIONFOLD_KEY = savedEnv
  await rm(dir, { recursive: true, force: true })
})

const COMMANDS: [string, string[], string?][] = [
  ['ls', ['ls']],
  ['show', ['show', 'root']],
  ['tree', ['tree', 'root']],
  ['events', ['events', 'root']],
  ['verify', ['verify']],
  ['export', ['export', 'root']],
  ['delete', ['delete', 'kid']],
]

describe('the command line on an encrypted store without its key', () => {
  for (const [name, args] of [...COMMANDS, ['import', ['import']] as [string, string[]]]) {
    it(`${name}: exit 1, KEY_REJECTED naming --key-file and SESSIONFOLD_KEY, nothing written`, async () => {
      const before = await files(sealed)
      const stdin = name === 'import' ? exported : undefined
      const text = await run([...args, '--dir', sealed], { stdin })
      expect(text.code).toBe(1)
      expect(text.out).toBe('')
      expect(text.err).toContain('--key-file <path>')
      expect(text.err).toContain('SESSIONFOLD_KEY environment variable')
      expect(text.err).toContain('(KEY_REJECTED)')
      expect(text.err).not.toContain('encryption: { key }')
      const json = await run([...args, '--dir', sealed, '--json'], { stdin })
      expect(json.code).toBe(1)
      const { error } = JSON.parse(json.err.trim()) as { error: { code: string; message: string } }
      expect(error.code).toBe('KEY_REJECTED')
      expect(error.message).toBe('this store is encrypted: give its key with --key-file <path> or the SESSIONFOLD_KEY environment variable')
      expect(await files(sealed)).toEqual(before)
    })
  }

  it('the executable: exit status 1 and the same message', () => {
    const env = { ...process.env }
    delete env.SESSIONFOLD_KEY
    const r = spawnSync(process.execPath, ['--import', 'tsx', join(root, 'src/cli/sessionfold.ts'), 'ls', '--dir', sealed], { encoding: 'utf8', env })
    expect(r.status).toBe(1)
    expect(r.stderr.trim()).toBe(
      'sessionfold: this store is encrypted: give its key with --key-file <path> or the SESSIONFOLD_KEY environment variable (KEY_REJECTED)',
    )
  })

  it('with its key, from SESSIONFOLD_KEY or --key-file, the same commands read it', async () => {
    expect((await run(['events', 'root', '--dir', sealed], { env: hex })).out).toContain('secret words')
    const file = join(dir, 'key.hex')
    await writeFile(file, hex)
    expect((await run(['ls', '--dir', sealed, '--key-file', file])).code).toBe(0)
  })

  it("openStore keeps the API's message: encryption: { key }", async () => {
    const err = await expectCode(openStore({ dir: sealed, worker: false }), 'KEY_REJECTED')
    expect(err.message).toBe('this store is encrypted: open it with its key (encryption: { key })')
  })
})

describe('the command line on a plain store with a key', () => {
  it('says which to drop: SESSIONFOLD_KEY or --key-file; nothing written', async () => {
    const before = await files(plain)
    const env = await run(['ls', '--dir', plain, '--json'], { env: hex })
    expect(env.code).toBe(1)
    expect(JSON.parse(env.err.trim())).toEqual({
      error: { code: 'KEY_REJECTED', message: 'this store was created without encryption: it is read without a key (unset SESSIONFOLD_KEY)' },
    })
    const file = join(dir, 'key.bin')
    await writeFile(file, key)
    const flag = await run(['delete', 'kid', '--dir', plain, '--key-file', file])
    expect(flag.code).toBe(1)
    expect(flag.err).toContain('it is read without a key (drop --key-file)')
    expect(await files(plain)).toEqual(before)
    expect((await run(['ls', '--dir', plain])).code).toBe(0)
  })
})
