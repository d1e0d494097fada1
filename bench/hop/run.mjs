// Diagnostic (transport level), npm run bench:hop: how a batch of 100 event bodies of ~300
// bytes should cross to a worker_threads worker. (a) as 100 strings in one message (what
// appendMany sends: the structured clone copies each string); (b) joined, encoded to one
// Uint8Array, transferred, then decoded and split in the worker. Round trips of 2,000
// batches, after one warm-up round; the worker answers with a number. Figures in µs per
// round trip. The result decides docs/ARCHITECTURE.md's "Each event crosses as its JSON body".
import { Worker } from 'node:worker_threads'

const w = new Worker(new URL('./worker.mjs', import.meta.url))
const WORDS = 'the agent read the file and proposed a patch to the parser so that the tests pass again '
const bodies = Array.from({ length: 100 }, (_, i) =>
  JSON.stringify({ type: 'message/assistant', time: 1, data: { role: 'assistant', text: WORDS.repeat(4).slice(0, 220) + i } }),
)
const enc = new TextEncoder()
const roundTrip = (m, transfer) =>
  new Promise((resolve) => {
    w.once('message', resolve)
    w.postMessage(m, transfer)
  })
const N = 2000
for (let round = 0; round < 5; round++) {
  let t0 = performance.now()
  for (let i = 0; i < N; i++) await roundTrip({ kind: 'strings', bodies })
  const strings = ((performance.now() - t0) / N) * 1000
  t0 = performance.now()
  for (let i = 0; i < N; i++) {
    const buf = enc.encode(bodies.join(''))
    await roundTrip({ kind: 'buf', buf, lens: bodies.map((b) => b.length) }, [buf.buffer])
  }
  const buffer = ((performance.now() - t0) / N) * 1000
  if (round > 0)
    console.log(`round ${round}: 100 strings ${strings.toFixed(1)} µs, one transferred buffer ${buffer.toFixed(1)} µs, ratio ${(buffer / strings).toFixed(2)}`)
}
await w.terminate()
