// The ceiling of bench/api.ts's batched ratio: a JSON log's own work with no store around it,
// in one thread and with its engine half across a worker (bench/floor-worker.ts).
import * as fs from 'node:fs'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { encodeBatch } from '../../src/backends/fs/record-format'
import type { EventInput } from '../../src/index-node'
import { encodeEventBody, encodeEventInput } from '../../src/core/validate'
import { writeAllSync } from '../common'
import { settlesWithin } from '../stats'

/**
 * The least any store that takes JSON events from an app does per batch, with nothing of this
 * one's around it: each input validated, stringified, numbered and parsed back
 * (encodeEventInput, what a fold needs), the batch framed with the fs record format's CRC-32s
 * (encodeBatch), then writeSync + fdatasyncSync into one new file; events/s. Its ratio to raw is
 * the ceiling of the batched targets on this machine.
 */
export function runJsonFloor(dir: string, batches: readonly EventInput[][], n: number): number {
  const fd = fs.openSync(join(dir, `floor-${n}.log`), 'w')
  let events = 0
  let offset = 0
  const t0 = performance.now()
  try {
    for (const b of batches) {
      const { buf } = encodeBatch(b.map((e) => encodeEventInput(e, events++, 'bench-floor')))
      writeAllSync(fd, buf, offset)
      offset += buf.length
      fs.fdatasyncSync(fd)
    }
  } finally {
    fs.closeSync(fd)
  }
  const ms = performance.now() - t0
  fs.rmSync(join(dir, `floor-${n}.log`))
  return (events / ms) * 1000
}

/**
 * The same floor with the engine's half across a worker (bench/floor-worker.ts): here each input
 * validated and stringified (encodeEventBody), the batch's bodies posted to a worker_threads worker
 * that numbers, parses, frames, writes and fdatasyncs them and answers; events/s. The floor of the
 * worker target: the least a store with its engine in a worker does per batch.
 */
export async function runJsonFloorWorker(dir: string, batches: readonly EventInput[][], n: number, stallMs: number): Promise<number> {
  const path = join(dir, `floor-worker-${n}.log`)
  // Started as the store starts a TypeScript worker: through tsx (src/client/node-boot.mjs).
  const worker = new Worker(new URL('../../src/client/node-boot.mjs', import.meta.url), {
    workerData: { entry: new URL('../floor-worker.ts', import.meta.url).href, path },
  })
  let failed: unknown
  worker.on('error', (err) => {
    failed = err
  })
  const answer = () =>
    new Promise<unknown>((resolve, reject) => {
      if (failed) reject(failed)
      worker.once('message', resolve)
    })
  try {
    if ((await settlesWithin(answer(), 'the floor worker', stallMs)) !== 'ready') throw new Error('the floor worker did not start')
    let events = 0
    const t0 = performance.now()
    for (const b of batches) {
      worker.postMessage(b.map((e) => encodeEventBody(e, 'bench-floor')))
      events += (await settlesWithin(answer(), 'the floor worker', stallMs)) as number
    }
    const ms = performance.now() - t0
    worker.postMessage('close')
    if ((await answer()) !== events) throw new Error('the floor worker lost events')
    return (events / ms) * 1000
  } finally {
    await worker.terminate()
    fs.rmSync(path, { force: true })
  }
}
