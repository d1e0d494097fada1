// The array types every `postgres()` instance sessionfold makes is given, in place of the driver
// fetching them. With `fetch_types` on (the driver's default), each new connection's first
// statement is the driver's own read of pg_type, in a promise it drops (porsager/postgres 3.4.9,
// issues 1192 and 1223): a connection reset or ended during that read (a server restarting, a
// network cut, a pool ended while it connects) rejected it with nobody to hear, an unhandled
// rejection, which ends a Node process. Built-in types have fixed OIDs (PostgreSQL's
// pg_type.dat), so the arrays the store sends and reads are known without asking; no connection
// starts with a statement of the driver's own any more, which also saves each one a round trip.

/** An array as the driver would send it: every element quoted, null as NULL, undefined refused (as the driver does). */
function serializeArray(value: unknown): unknown {
  if (!Array.isArray(value)) return value // already a literal
  return `{${value
    .map((x: unknown) => {
      if (x === undefined) throw new Error('UNDEFINED_VALUE: undefined values are not allowed in an array parameter')
      if (x === null) return 'NULL'
      return Array.isArray(x) ? serializeArray(x) : `"${String(x).replace(/[\\"]/g, '\\$&')}"`
    })
    .join(',')}}`
}

/**
 * An array as the server writes it (`{1,2,NULL}`, `{"a b","c\"d"}`, `{{1},{2}}`, or with
 * bounds `[0:1]={1,2}`), its elements through `element`; a text that is not one throws.
 */
export function parseArray(text: string, element: (s: string) => unknown): unknown[] {
  let i = text.startsWith('[') ? text.indexOf('=') + 1 : 0
  const bad = () => new Error(`not an array literal: ${text.slice(0, 80)}`)
  const list = (): unknown[] => {
    if (text[i] !== '{') throw bad()
    i++
    const out: unknown[] = []
    if (text[i] === '}') {
      i++
      return out
    }
    for (;;) {
      if (text[i] === '{') out.push(list())
      else if (text[i] === '"') {
        let s = ''
        let from = ++i
        for (; i < text.length && text[i] !== '"'; i++) {
          if (text[i] !== '\\') continue
          s += text.slice(from, i)
          from = ++i
        }
        if (i >= text.length) throw bad()
        out.push(element(s + text.slice(from, i++)))
      } else {
        const from = i
        while (i < text.length && text[i] !== ',' && text[i] !== '}') i++
        const raw = text.slice(from, i)
        out.push(raw.toUpperCase() === 'NULL' ? null : element(raw))
      }
      const next = text[i++]
      if (next === '}') return out
      if (next !== ',') throw bad()
    }
  }
  const out = list()
  if (i !== text.length) throw bad()
  return out
}

/** One type as the driver's `types` option takes it (the `PostgresType` of postgres 3.4). */
export interface DriverType {
  /** The OID parameters of this type are sent as. */
  to: number
  /** The OIDs whose values `parse` reads. */
  from: number[]
  /** A value as the text sent for it. */
  serialize: (value: unknown) => unknown
  /** The text the server sent, as a value. */
  parse: (raw: string) => unknown
}

/** What {@link DRIVER_OPTIONS} holds. */
export interface DriverOptions {
  /** Off: no connection starts with the driver's own read of `pg_type`. */
  readonly fetch_types: false
  /** The array types the adapter sends and reads, by name. */
  readonly types: Readonly<Record<string, DriverType>>
}

const arrayOf = (oid: number, element: (s: string) => unknown): DriverType =>
  Object.freeze({
    to: oid,
    from: Object.freeze([oid]) as number[],
    serialize: serializeArray,
    parse: (text: string) => parseArray(text, element),
  })

/**
 * Options for a `postgres()` instance of your own given to {@link createPostgresAdapter} as `sql`
 * or `appendSql`; every pool sessionfold makes has them. They turn the driver's own type fetch
 * off and give it the array types the adapter uses instead: int2[] and int4[] (read as numbers),
 * int8[] (read as strings, as the driver reads int8) and text[]. With the driver's default
 * (`fetch_types: true`), each new connection first reads `pg_type` in a promise the driver
 * leaves unhandled (postgres 3.4): a connection lost or ended at that moment is an unhandled
 * rejection, which ends a Node process. Your own queries on that pool then have arrays of
 * these four types only; give `types` of your own for others.
 *
 * @example
 * import postgres from 'postgres'
 * import { createPostgresAdapter, DRIVER_OPTIONS } from 'sessionfold/adapters/postgres'
 *
 * const sql = postgres(process.env.DATABASE_URL!, { ...DRIVER_OPTIONS, max: 10 })
 * const storage = createPostgresAdapter({ sql })
 */
export const DRIVER_OPTIONS: DriverOptions = Object.freeze({
  fetch_types: false,
  types: Object.freeze({
    sessionfold_int2_array: arrayOf(1005, Number),
    sessionfold_int4_array: arrayOf(1007, Number),
    sessionfold_int8_array: arrayOf(1016, String),
    sessionfold_text_array: arrayOf(1009, String),
  }),
})
