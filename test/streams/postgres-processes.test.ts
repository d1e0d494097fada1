// Contract: §16 Durable Streams with §11 PostgreSQL — createStreamsHandler keeps nothing between
// requests that the store does not, so two server processes (test/fixtures/streams-pg-server-process.ts,
// each its own openStore over one throwaway PostgreSQL cluster, on 127.0.0.1) serve the same
// stream: idempotent producers write through either at random, several at once, each message
// once and in its producer's order; a retry sent to the other process is a duplicate that
// writes nothing; a gap and a stale epoch there are refused with nothing written; a producer's
// close through one is final for the other, and its retry through the other is a duplicate.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeOffset, encodeOffset } from '../../src/core/streams'
import { H } from '../../src/streams/server/http'
import { spawnFixture, type Child } from '../support/fixture-process'
import { postgresBin, startCluster, type PgCluster } from '../support/postgres'

const STREAM = 'shared-log'
const PRODUCERS = ['p0', 'p1', 'p2', 'p3']
const MESSAGES = 40
/** p3 moves to epoch 1 at this message (its Producer-Seq starts again at 0). */
const BUMP_AT = 20

interface Message {
  producer: string
  n: number
  epoch: number
  seq: number
}

/** A seeded choice of process per request: a failing run can be replayed. */
function seeded(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0
    return s / 2 ** 32
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe.skipIf(!postgresBin())('Durable Streams: two server processes over one PostgreSQL store', () => {
  let cluster: PgCluster | undefined
  const children: Child[] = []
  const exits = new Map<Child, number | null>()
  /** The two processes' stream URLs. */
  const urls: [string, string] = ['', '']

  beforeAll(async () => {
    cluster = await startCluster({ settings: { fsync: 'off' } })
    const url = await cluster.createDatabase('streams_processes')
    // Both open the store at once (its tables made by whichever comes first).
    const started = [0, 1].map(() => {
      const child = spawnFixture('streams-pg-server-process.ts', [url, 'streams'])
      children.push(child)
      void child.exited.then(() => exits.set(child, child.process.exitCode))
      return child
    })
    const ports = await Promise.all(started.map(async (c) => Number((await c.line()).replace('port ', ''))))
    for (const [i, port] of ports.entries()) urls[i] = `http://127.0.0.1:${port}/v1/stream/${STREAM}`
  }, 120_000)

  afterAll(async () => {
    for (const c of children) c.process.stdin?.end()
    await Promise.all(children.map((c) => Promise.race([c.exited, sleep(10_000)])))
    for (const c of children) if (c.process.exitCode === null && c.process.signalCode === null) c.process.kill('SIGKILL')
    await Promise.all(children.map((c) => c.exited))
    await cluster?.stop()
  })

  /** A producer's POST: `message` as its JSON body, or none (a close). */
  const send = (to: number, producer: string, epoch: number, seq: number, message?: unknown, extra: Record<string, string> = {}) =>
    fetch(urls[to]!, {
      method: 'POST',
      headers: {
        [H.producerId]: producer,
        [H.producerEpoch]: String(epoch),
        [H.producerSeq]: String(seq),
        ...(message === undefined ? {} : { 'content-type': 'application/json' }),
        ...extra,
      },
      ...(message === undefined ? {} : { body: JSON.stringify(message) }),
    })
  const readAll = async (from: number): Promise<{ status: number; headers: Headers; messages: Message[] }> => {
    const response = await fetch(`${urls[from]}?offset=-1`)
    return { status: response.status, headers: response.headers, messages: (await response.json()) as Message[] }
  }

  it('serves one stream from both: producers at random through either, retries elsewhere duplicates, closure final for both', async () => {
    const [A, B] = [0, 1]
    const created = await fetch(urls[A]!, { method: 'PUT', headers: { 'content-type': 'application/json' } })
    expect(created.status).toBe(201)
    // The other process finds it as it is: an idempotent PUT, not a new stream.
    const again = await fetch(urls[B]!, { method: 'PUT', headers: { 'content-type': 'application/json' } })
    expect(again.status).toBe(200)
    expect(again.headers.get(H.offset)).toBe(encodeOffset(0))

    const random = seeded(0x5eed)
    /** Each acknowledged append: the position its answer's Stream-Next-Offset names, and its message. */
    const acked = new Map<number, Message>()
    const refused: string[] = []
    /** Appends taken by A and by B. */
    const served = [0, 0]

    const produce = async (producer: string) => {
      for (let n = 0; n < MESSAGES; n++) {
        const epoch = producer === 'p3' && n >= BUMP_AT ? 1 : 0
        const seq = producer === 'p3' && n >= BUMP_AT ? n - BUMP_AT : n
        const message: Message = { producer, n, epoch, seq }
        const to = random() < 0.5 ? A : B
        const other = 1 - to
        const answer = await send(to, producer, epoch, seq, message)
        const where = `${producer} #${n} through ${to === A ? 'A' : 'B'}`
        expect(answer.status, `${where}: ${await answer.text()}`).toBe(200)
        expect(answer.headers.get(H.producerEpoch), where).toBe(String(epoch))
        expect(answer.headers.get(H.producerSeq), where).toBe(String(seq))
        const position = decodeOffset(answer.headers.get(H.offset) ?? '')
        expect(position, where).toBeDefined()
        expect(acked.has(position!), `${where}: offset ${position} given twice`).toBe(false)
        acked.set(position!, message)
        served[to]!++

        // The same request again, through the other process: a duplicate, nothing written.
        if (n % 4 === 3) {
          const retry = await send(other, producer, epoch, seq, message)
          expect(retry.status, `retry of ${where}: ${await retry.text()}`).toBe(204)
          expect(retry.headers.get(H.producerEpoch)).toBe(String(epoch))
          expect(retry.headers.get(H.producerSeq)).toBe(String(seq))
        }
        // An older one of this epoch: a duplicate too (its answer names the last seq taken).
        if (n % 8 === 6 && seq >= 3) {
          const old = await send(other, producer, epoch, seq - 3, { ...message, n: -1 })
          expect(old.status, `old retry after ${where}: ${await old.text()}`).toBe(204)
          expect(old.headers.get(H.producerSeq)).toBe(String(seq))
        }
        // A gap through the other process: 409 with the seq expected, nothing written.
        if (producer === 'p1' && n === 10) {
          const gap = await send(other, producer, epoch, seq + 2, { producer, n: -2, epoch, seq: seq + 2 })
          expect(gap.status, `gap after ${where}: ${await gap.text()}`).toBe(409)
          expect(gap.headers.get(H.expectedSeq)).toBe(String(seq + 1))
          expect(gap.headers.get(H.receivedSeq)).toBe(String(seq + 2))
          refused.push('gap')
        }
        // p3's epoch 0 once epoch 1 wrote, through the other process: fenced (403), even as a
        // retry of what epoch 0 had written, nothing written.
        if (producer === 'p3' && (n === BUMP_AT || n === MESSAGES - 1)) {
          for (const staleSeq of [BUMP_AT, BUMP_AT - 1]) {
            const stale = await send(other, producer, 0, staleSeq, { producer, n: -3, epoch: 0, seq: staleSeq })
            expect(stale.status, `stale epoch after ${where}: ${await stale.text()}`).toBe(403)
            expect(stale.headers.get(H.producerEpoch)).toBe('1')
            refused.push('stale')
          }
        }
      }
    }

    // Meanwhile readers of both processes: every read is a prefix of the final stream.
    let writing = true
    const snapshots: Message[][] = []
    const reading = (async () => {
      for (let i = 0; writing; i++) {
        const read = await readAll(i % 2)
        expect(read.status).toBe(200)
        snapshots.push(read.messages)
        await sleep(50)
      }
    })()
    const started = Date.now()
    try {
      await Promise.all(PRODUCERS.map(produce))
    } finally {
      writing = false
      await reading.catch(() => {})
    }
    console.log(
      `${acked.size} appends (and their retries) through two processes in ${Date.now() - started} ms (A ${served[0]}, B ${served[1]}), ${snapshots.length} reads meanwhile`,
    )
    await reading
    expect(refused).toEqual(['gap', 'stale', 'stale', 'stale', 'stale'])
    expect(Math.min(...served)).toBeGreaterThan(40)

    // Read back from both: the same messages, each acknowledged one at the position its answer named.
    const total = PRODUCERS.length * MESSAGES
    expect([...acked.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: total }, (_, i) => i + 1))
    const [fromA, fromB] = await Promise.all([readAll(A), readAll(B)])
    for (const read of [fromA, fromB]) {
      expect(read.status).toBe(200)
      expect(read.headers.get('content-type')).toBe('application/json')
      expect(read.headers.get(H.offset)).toBe(encodeOffset(total))
      expect(read.headers.get(H.closed)).toBeNull()
    }
    expect(fromB.messages).toEqual(fromA.messages)
    expect(fromA.messages).toEqual(Array.from({ length: total }, (_, i) => acked.get(i + 1)))
    for (const producer of PRODUCERS) {
      expect(fromA.messages.filter((m) => m.producer === producer).map((m) => m.n)).toEqual(Array.from({ length: MESSAGES }, (_, n) => n))
    }
    for (const snapshot of snapshots) expect(snapshot).toEqual(fromA.messages.slice(0, snapshot.length))

    // p0 closes the stream through B (no body): committed with its producer state.
    const close = await send(B, 'p0', 0, MESSAGES, undefined, { [H.closed]: 'true' })
    expect(close.status, await close.text()).toBe(204)
    expect(close.headers.get(H.closed)).toBe('true')
    expect(close.headers.get(H.offset)).toBe(encodeOffset(total))
    expect(close.headers.get(H.producerSeq)).toBe(String(MESSAGES))
    // An append through A: 409, the stream closed (with or without a producer).
    const late = await send(A, 'p1', 0, MESSAGES, { producer: 'p1', n: MESSAGES, epoch: 0, seq: MESSAGES })
    expect(late.status, await late.text()).toBe(409)
    expect(late.headers.get(H.closed)).toBe('true')
    const plain = await fetch(urls[A]!, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"late":true}' })
    expect(plain.status).toBe(409)
    expect(plain.headers.get(H.closed)).toBe('true')
    // Another producer's close is no retry of this one: 409.
    const otherClose = await send(A, 'p2', 0, MESSAGES, undefined, { [H.closed]: 'true' })
    expect(otherClose.status).toBe(409)
    // The close retried through A, and through B: duplicates.
    for (const to of [A, B]) {
      const retry = await send(to, 'p0', 0, MESSAGES, undefined, { [H.closed]: 'true' })
      expect(retry.status, await retry.text()).toBe(204)
      expect(retry.headers.get(H.closed)).toBe('true')
      expect(retry.headers.get(H.offset)).toBe(encodeOffset(total))
    }

    // Both tell the same closed stream, the same messages.
    for (const to of [A, B]) {
      const head = await fetch(urls[to]!, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(head.headers.get(H.closed)).toBe('true')
      expect(head.headers.get(H.offset)).toBe(encodeOffset(total))
      const read = await readAll(to)
      expect(read.headers.get(H.closed)).toBe('true')
      expect(read.messages).toEqual(fromA.messages)
    }

    // Both processes shut down cleanly once told to (stdin ends).
    for (const c of children) c.process.stdin?.end()
    await Promise.all(children.map((c) => Promise.race([c.exited, sleep(10_000)])))
    expect(children.map((c) => exits.get(c))).toEqual([0, 0])
  })
})
