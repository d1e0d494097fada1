// Seeded randomness for the chaos run: a stream per name, so that one seed makes the same
// choices everywhere however the streams interleave (a proxy's decisions per device and
// request number, a device's workload), as far as the timing of the run allows.

/** A 32-bit hash of the parts (FNV-1a over their text, then mixed). */
function hash32(parts: readonly (string | number)[]): number {
  let h = 0x811c9dc5
  for (const c of parts.join('\u0000')) {
    h ^= c.codePointAt(0)!
    h = Math.imul(h, 0x01000193)
  }
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  return h >>> 0
}

export interface Random {
  /** A float in [0, 1). */
  next(): number
  /** An integer in [lo, hi]. */
  int(lo: number, hi: number): number
  /** True with probability p. */
  chance(p: number): boolean
  /** One of the items. */
  pick<T>(items: readonly T[]): T
  /** A key chosen by its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K
}

/** The stream named by `parts` under `seed` (mulberry32). */
export function seeded(seed: number, ...parts: (string | number)[]): Random {
  let a = hash32([seed, ...parts])
  const next = (): number => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  const random: Random = {
    next,
    int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)),
    chance: (p) => next() < p,
    pick: (items) => items[Math.floor(next() * items.length)]!,
    weighted: (weights) => {
      const entries = Object.entries(weights) as [keyof typeof weights, number][]
      let r = next() * entries.reduce((n, [, w]) => n + w, 0)
      for (const [k, w] of entries) {
        r -= w
        if (r < 0) return k
      }
      return entries.at(-1)![0]
    },
  }
  return random
}
