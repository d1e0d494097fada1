// The inspector's event list: a virtualised list over a whole log (100,000 events and more).
// Only the rows in view (and a few either side) exist in the DOM, from a small pool reused as
// the list scrolls; events are read in pages of 512 when first shown and kept in a bounded cache.
import type { SessionEvent } from 'sessionfold'

const ROW = 22
const PAGE = 512
const OVERSCAN = 12
/** Pages kept in memory (about 32,000 events), the least recently shown dropped first. */
const MAX_PAGES = 64

export class EventList {
  #length = 0
  #at = 0
  readonly #pages = new Map<number, SessionEvent[] | Promise<void>>()
  readonly #pool: HTMLDivElement[] = []
  #frame = 0

  constructor(
    private readonly box: HTMLElement,
    private readonly space: HTMLElement,
    /** Reads events `[from, to)` of the session shown. */
    private readonly read: (from: number, to: number) => Promise<SessionEvent[]>,
  ) {
    box.addEventListener('scroll', () => this.#schedule())
    new ResizeObserver(() => this.#schedule()).observe(box)
  }

  /** Another session: forget what was read. */
  reset(length: number, at: number): void {
    this.#pages.clear()
    this.#length = length
    this.#at = at
    this.space.style.height = `${length * ROW}px`
    this.box.scrollTop = 0
    this.#schedule()
  }

  /** The log grew (live): the last page may have grown too. */
  grow(length: number): void {
    if (length === this.#length) return
    this.#pages.delete(Math.floor(this.#length / PAGE))
    this.#length = length
    this.space.style.height = `${length * ROW}px`
    this.#schedule()
  }

  /** The point shown: rows at or after it are dimmed, the one before it marked. */
  setAt(at: number, reveal: boolean): void {
    this.#at = at
    if (reveal) {
      const top = Math.max(0, (at - 1) * ROW - this.box.clientHeight / 2)
      if (Math.abs(this.box.scrollTop - top) > this.box.clientHeight / 3) this.box.scrollTop = top
    }
    this.#schedule()
  }

  #schedule(): void {
    if (this.#frame) return
    this.#frame = requestAnimationFrame(() => {
      this.#frame = 0
      this.#render()
    })
  }

  #render(): void {
    const first = Math.max(0, Math.floor(this.box.scrollTop / ROW) - OVERSCAN)
    const last = Math.min(this.#length, Math.ceil((this.box.scrollTop + this.box.clientHeight) / ROW) + OVERSCAN)
    const count = Math.max(0, last - first)
    while (this.#pool.length < count) {
      const row = document.createElement('div')
      row.className = 'row'
      row.innerHTML = '<span class="seq"></span><span class="type"></span><span class="data"></span>'
      this.space.append(row)
      this.#pool.push(row)
    }
    for (let i = 0; i < this.#pool.length; i++) {
      const row = this.#pool[i]!
      const seq = first + i
      if (i >= count) {
        row.hidden = true
        continue
      }
      row.hidden = false
      row.style.top = `${seq * ROW}px`
      row.classList.toggle('after', seq >= this.#at)
      row.classList.toggle('at', seq === this.#at - 1)
      const [s, t, d] = row.children as unknown as HTMLSpanElement[]
      s!.textContent = String(seq)
      const e = this.#event(seq)
      row.classList.toggle('pending', !e)
      t!.textContent = e ? e.type : '…'
      d!.textContent = e ? preview(e) : ''
    }
  }

  /** The event if its page is read; else starts reading the page (and renders again when it comes). */
  #event(seq: number): SessionEvent | undefined {
    const n = Math.floor(seq / PAGE)
    const page = this.#pages.get(n)
    if (Array.isArray(page)) {
      this.#pages.delete(n) // most recently shown last
      this.#pages.set(n, page)
      return page[seq - n * PAGE]
    }
    if (!page) {
      const length = this.#length
      const loading = this.read(n * PAGE, Math.min(length, (n + 1) * PAGE)).then(
        (events) => {
          if (this.#pages.get(n) !== loading) return // reset meanwhile
          this.#pages.set(n, events)
          while (this.#pages.size > MAX_PAGES) this.#pages.delete(this.#pages.keys().next().value!)
          this.#schedule()
        },
        () => void this.#pages.delete(n),
      )
      this.#pages.set(n, loading)
    }
    return undefined
  }
}

function preview(e: SessionEvent): string {
  if (e.data === undefined || e.data === null) return ''
  const text = typeof e.data === 'string' ? e.data : JSON.stringify(e.data)
  return text.length > 160 ? `${text.slice(0, 160)}…` : text
}
