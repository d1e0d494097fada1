// The JSON-log floor of bench/api.ts across a worker (worker_threads): each message is one batch's
// event bodies (encodeEventBody, made by the caller's thread); this thread numbers and parses them
// (eventFromBody), frames them with CRC-32s (encodeBatch), appends them to its file with
// writeSync + fdatasyncSync, and answers with the count. No store, no comlink: what any store with
// its engine in a worker does at the least per batch.
import * as fs from 'node:fs'
import { parentPort, workerData } from 'node:worker_threads'
import { encodeBatch } from '../src/backends/fs/record-format'
import { eventFromBody } from '../src/core/validate'
import { writeAllSync } from './common'

const fd = fs.openSync((workerData as { path: string }).path, 'w')
let seq = 0
let offset = 0
parentPort!.on('message', (bodies: string[] | 'close') => {
  if (bodies === 'close') {
    fs.closeSync(fd)
    parentPort!.postMessage(seq)
    return
  }
  const { buf } = encodeBatch(bodies.map((b) => eventFromBody(b, seq++, 'bench-floor')))
  writeAllSync(fd, buf, offset)
  offset += buf.length
  fs.fdatasyncSync(fd)
  parentPort!.postMessage(bodies.length)
})
parentPort!.postMessage('ready') // loaded (through tsx): the caller's clock starts after this
