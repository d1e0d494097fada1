// What each writer of the chaos run says it wrote: every event carries a tag `{ w: writer, n }`,
// and for every append the writer keeps the session, the seq, the tag and a hash of the tags of
// the log's prefix [0, seq) as its own log had it, and whether the append resolved. A log that
// holds an event on top of another prefix than its writer's holds events of two histories.
import { createHash } from 'node:crypto'
import type { Json, SessionEvent, SessionId } from '../../../src/core/model'
import type { Session } from '../../../src/index-node'

export const EVENT_TYPE = 'chaos/e'

/** One event as its writer wrote it. */
export interface Written {
  session: SessionId
  seq: number
  /** `writer:n` */
  tag: string
  writer: string
  /** The chain value of the writer's log before it: see {@link chainOf}. */
  prefix: string
  /** The append resolved. */
  acked: boolean
}

/** An event's tag (`writer:n`), or a stand-in naming what it is when it has none. */
export function tagOf(e: Pick<SessionEvent, 'type' | 'data'>): string {
  const d = e.data as { w?: unknown; n?: unknown } | null
  if (d && typeof d === 'object' && typeof d.w === 'string' && typeof d.n === 'number') return `${d.w}:${d.n}`
  return `untagged(${e.type})`
}

const START = '0'
const step = (prev: string, tag: string) => createHash('sha256').update(`${prev} ${tag}`).digest('base64url').slice(0, 16)

/** chain[i] is the hash of tags[0, i): chain[0] of the empty prefix, chain[tags.length] of all. */
export function chainOf(tags: readonly string[]): string[] {
  const chain = [START]
  for (const t of tags) chain.push(step(chain.at(-1)!, t))
  return chain
}

/** Every writer's record, by tag. */
export class Ledger {
  readonly byTag = new Map<string, Written>()
  /** What went wrong while writing (a log that changed under its writer…), for the report. */
  readonly problems: string[] = []
  /** Sessions a device deleted (ids are never used again in a run), and which device. */
  readonly deleted = new Map<SessionId, string>()

  acked(): Written[] {
    return [...this.byTag.values()].filter((w) => w.acked)
  }
}

/**
 * A session open for writing on one device, with the tags of its log as that device has it: while
 * it is open nobody else writes to it there (a pull skips a session held open), so its own appends
 * are all that change it.
 */
export class WriterHandle {
  private constructor(
    readonly session: Session,
    readonly writer: string,
    private readonly ledger: Ledger,
    private readonly tags: string[],
    private readonly chain: string[],
  ) {}

  static async open(session: Session, writer: string, ledger: Ledger): Promise<WriterHandle> {
    const tags: string[] = []
    for await (const e of session.events()) tags.push(tagOf(e))
    return new WriterHandle(session, writer, ledger, tags, chainOf(tags))
  }

  get id(): SessionId {
    return this.session.id
  }

  get length(): number {
    return this.tags.length
  }

  /** Appends `ns.length` tagged events in one batch, recorded before it is sent and marked once it resolves. */
  async append(ns: readonly number[], pad = 0): Promise<void> {
    const first = this.tags.length
    const records: Written[] = []
    const chain = [this.chain.at(-1)!]
    for (const [i, n] of ns.entries()) {
      const tag = `${this.writer}:${n}`
      records.push({ session: this.id, seq: first + i, tag, writer: this.writer, prefix: chain[i]!, acked: false })
      chain.push(step(chain[i]!, tag))
    }
    for (const w of records) this.ledger.byTag.set(w.tag, w)
    const events = ns.map((n) => ({ type: EVENT_TYPE, data: { w: this.writer, n, ...(pad > 0 ? { pad: 'x'.repeat(pad) } : {}) } as Json }))
    const result = await this.session.append(events)
    for (const w of records) w.acked = true
    if (result.firstSeq === first) {
      this.tags.push(...records.map((w) => w.tag))
      this.chain.push(...chain.slice(1))
      return
    }
    // Its log changed under its writer: a bug of its own. What it holds now is read again.
    this.ledger.problems.push(
      `${this.writer}: ${this.id} changed under its writer: an append expected at seq ${first} got ${result.firstSeq}..${result.lastSeq}`,
    )
    for (const [i, w] of records.entries()) w.seq = result.firstSeq + i
    this.tags.length = 0
    for await (const e of this.session.events()) this.tags.push(tagOf(e))
    this.chain.splice(0, this.chain.length, ...chainOf(this.tags))
  }

  close(): Promise<void> {
    return this.session.close()
  }
}
