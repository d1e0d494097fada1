// HEADs of one stream from a process of their own (bench/streams.ts, its "a HEAD meanwhile"
// row): one after another, `everyMs` apart, from the moment the process is ready until it is
// told to stop; then their ms. In the benchmark's own process they waited behind its 50
// producers' work (about 20 ms of a 23 ms HEAD on sessionfold, when the server itself took 3.5
// ms from the request to the end of its answer), so the row measured the client as much as the
// server it was about. This process does nothing else.
import { fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'

type FromProber = { kind: 'ready' } | { kind: 'heads'; ms: number[] } | { kind: 'error'; message: string }

async function proberChild(url: string, everyMs: number): Promise<void> {
  let stop = false
  process.on('message', () => {
    stop = true
  })
  const out: number[] = []
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
  try {
    // One HEAD before ready: the connection is made and the code warm when the timed ones start.
    await (await fetch(url, { method: 'HEAD' })).arrayBuffer()
    process.send!({ kind: 'ready' } satisfies FromProber)
    await sleep(everyMs)
    while (!stop) {
      const t0 = performance.now()
      const res = await fetch(url, { method: 'HEAD' })
      await res.arrayBuffer()
      if (res.status !== 200) throw new Error(`HEAD ${url}: ${res.status}`)
      if (!stop) out.push(performance.now() - t0)
      await sleep(everyMs)
    }
    process.send!({ kind: 'heads', ms: out } satisfies FromProber, () => process.exit(0))
  } catch (err) {
    process.send!({ kind: 'error', message: String(err) } satisfies FromProber, () => process.exit(1))
  }
}

/** Starts HEADs of `url` every `everyMs` in a child process; `stop()` ends them and gives their ms. */
export async function startHeadProber(url: string, everyMs: number): Promise<{ stop(): Promise<number[]> }> {
  const child = fork(fileURLToPath(import.meta.url), ['--prober', url, String(everyMs)], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const next = <K extends FromProber['kind']>(what: K) =>
    new Promise<Extract<FromProber, { kind: K }>>((resolve, reject) => {
      const onMessage = (m: FromProber) => {
        if (m.kind !== what && m.kind !== 'error') return
        child.off('message', onMessage)
        child.off('exit', onExit)
        if (m.kind === 'error') reject(new Error(`the HEAD prober failed: ${m.message}`))
        else resolve(m as Extract<FromProber, { kind: K }>)
      }
      const onExit = (code: number | null) => reject(new Error(`the HEAD prober exited (${code}) while waiting for ${what}`))
      child.on('message', onMessage)
      child.once('exit', onExit)
    })
  await next('ready')
  return {
    async stop() {
      const heads = next('heads')
      child.send('stop')
      return (await heads).ms
    },
  }
}

const at = process.argv.indexOf('--prober')
if (at >= 0) void proberChild(process.argv[at + 1]!, Number(process.argv[at + 2]))
