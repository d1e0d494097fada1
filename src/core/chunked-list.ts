// A persistent (immutable) list built for append-only folds: a stack of chunks of up to 64
// entries, newest chunk on top. Appending copies at most the head chunk, so a fold that
// appends to a list of D entries costs O(1), and every earlier state stays valid.
export const CHUNK_SIZE = 64

interface Node<T> {
  readonly items: readonly T[]
  readonly next: Node<T> | null
}

/**
 * A persistent (immutable) list for the states of folds that only append, such as a catalog:
 * `append` returns a new list and copies at most one 64-entry chunk, so a fold over D entries
 * stays O(1) per event and every earlier state stays valid. Its JSON form (`toJSON`) is the
 * chunks; `chunkedListSchema` (from `sessionfold/worker`) validates it and rebuilds the list.
 */
export class ChunkedList<T> implements Iterable<T> {
  private constructor(
    private readonly head: Node<T> | null,
    /** How many entries it holds. */
    readonly length: number,
  ) {}

  /** A list with no entries. */
  static empty<T>(): ChunkedList<T> {
    return new ChunkedList<T>(null, 0)
  }

  /** A new list with `item` at the end; this one is unchanged. */
  append(item: T): ChunkedList<T> {
    const head = this.head
    if (head && head.items.length < CHUNK_SIZE) {
      return new ChunkedList({ items: [...head.items, item], next: head.next }, this.length + 1)
    }
    return new ChunkedList({ items: [item], next: head }, this.length + 1)
  }

  /** Chunks newest first, each oldest-to-newest: `[1, 64, 64, …]` for 129 entries. */
  chunks(): (readonly T[])[] {
    const out: (readonly T[])[] = []
    for (let n = this.head; n; n = n.next) out.push(n.items)
    return out
  }

  /** Oldest to newest, O(length). */
  *[Symbol.iterator](): Iterator<T> {
    const chunks = this.chunks()
    for (let i = chunks.length - 1; i >= 0; i--) yield* chunks[i]!
  }

  /** Oldest to newest, O(length) with a small constant: no iterator (a view of 10,000 entries is built per change). */
  toArray(): T[] {
    // Allocated once at its length (pushing would reallocate it as it grows, three times the garbage).
    const out = new Array<T>(this.length)
    let end = this.length
    for (let n = this.head; n; n = n.next) {
      end -= n.items.length
      for (let j = 0; j < n.items.length; j++) out[end + j] = n.items[j]!
    }
    return out
  }

  /** The JSON form: chunks newest first, so nesting is two levels whatever the length. */
  toJSON(): T[][] {
    return this.chunks().map((c) => [...c])
  }

  /** Rebuilds a list from its JSON form (already validated by `chunkedListSchema`). */
  static fromChunks<T>(chunks: readonly (readonly T[])[]): ChunkedList<T> {
    let head: Node<T> | null = null
    let length = 0
    for (let i = chunks.length - 1; i >= 0; i--) {
      head = { items: [...chunks[i]!], next: head }
      length += chunks[i]!.length
    }
    return new ChunkedList(head, length)
  }
}
