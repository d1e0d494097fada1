// Diagnostic worker of bench/hop/run.mjs: takes a batch of bodies either way and answers with a number.
import { parentPort } from 'node:worker_threads'
const dec = new TextDecoder()
parentPort.on('message', (m) => {
  if (m.kind === 'strings') {
    let n = 0
    for (const s of m.bodies) n += s.length
    parentPort.postMessage(n)
  } else {
    const text = dec.decode(m.buf)
    const bodies = []
    let at = 0
    for (const len of m.lens) {
      bodies.push(text.slice(at, at + len))
      at += len
    }
    parentPort.postMessage(bodies.length)
  }
})
