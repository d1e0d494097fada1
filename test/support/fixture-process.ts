// A fixture process for the tests (node --import tsx test/fixtures/<name>.ts ...), spoken to
// by lines: send() writes one to its stdin, line() resolves with its next stdout line.
import { spawn, type ChildProcess } from 'node:child_process'
import { join } from 'node:path'

export interface Child {
  readonly process: ChildProcess
  send(line: string): void
  line(): Promise<string>
  readonly exited: Promise<void>
}

export function spawnFixture(name: string, args: string[]): Child {
  const p = spawn(process.execPath, ['--import', 'tsx', join(__dirname, '../fixtures', name), ...args], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines: string[] = []
  const waiting: ((line: string) => void)[] = []
  let buffered = ''
  p.stdout!.on('data', (d: Buffer) => {
    buffered += d.toString()
    const parts = buffered.split('\n')
    buffered = parts.pop()!
    for (const l of parts) (waiting.shift() ?? ((x: string) => lines.push(x)))(l)
  })
  const exited = new Promise<void>((resolve) => p.once('exit', () => resolve()))
  return {
    process: p,
    send: (line) => p.stdin!.write(`${line}\n`),
    line: () =>
      lines.length > 0
        ? Promise.resolve(lines.shift()!)
        : Promise.race([
            new Promise<string>((resolve) => waiting.push(resolve)),
            exited.then(() => {
              throw new Error(`fixture ${name} exited`)
            }),
          ]),
    exited,
  }
}

/**
 * A process that takes something (a write lease, a lock) and holds it until killed: `script`
 * run with tsx, resolved once it prints `holding`, rejected if it exits first. It is added to
 * `track` at once, so that a test's cleanup kills it even when it never got so far.
 */
export async function spawnHolder(script: string, args: string[], track: ChildProcess[], cwd?: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', script, ...args], { cwd, stdio: ['ignore', 'pipe', 'inherit'] })
  track.push(child)
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString()
      if (out.includes('holding')) resolve()
    })
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code} before holding`)))
  })
  return child
}
