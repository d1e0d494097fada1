// Key-value records in PostgreSQL (the public kv and the store's rows over it, schema version 7):
// the store's own in `records`, a session's in `session_records`, keyed (session_id, the key's
// parts after the id) and deleted with their session by its foreign key. Keys are their flat
// form (kv.ts) in the "C" collation, so the database orders them as the parts sort. The store's
// rows (src/storage/records) stay in the tables stores of 0.1 keep them in: a session's
// checkpoint row in `checkpoints`, its history rows in `history` (by position), meta records in
// `meta`. A put commits without waiting for its WAL flush, unless it is 'durable'.
import type { SessionId } from '../../core/model'
import { assertKey, assertWrites, flat, notFoundForKey, rangeStart, resolveKeyRange, sessionOfKey, SEPARATOR, unflat } from '../../storage/kv'
import { CHECKPOINT_PART, HISTORY_PART, META_PART, positionOf } from '../../storage/records/keys'
import { compareIds, type KeyValueStore, type RecordKey, type RecordWrite } from '../../storage/types'
import { codeOf } from './errors'
import type { PostgresClient } from './options'
import type { Names } from './schema'

type Run = <T>(op: string, body: (sql: PostgresClient) => Promise<T>) => Promise<T>

/** Tries of a writeMany that meets a deadlock (another process's writes of the same rows in another order). */
const DEADLOCK_TRIES = 5

/** The row a key is stored in: its table, its key columns (with their types) and values, its value column. */
interface Place {
  table: string
  owner?: SessionId
  cols: [string, string][]
  vals: unknown[]
  value: string
}

const S = SEPARATOR

/**
 * Keys of the store's own records strictly between $1 and $2, in order, at most $3: a range of
 * the table's primary key (text in "C"), so the database reads its index from $1 and stops after
 * the page, whatever the table holds.
 */
export const recordsRangeSql = (records: string): string =>
  `SELECT key AS k FROM ${records} WHERE key > $1::text COLLATE "C" AND key < $2::text COLLATE "C" ORDER BY key LIMIT $3`

export function createPgRecords(run: Run, n: Names, prepare: boolean): KeyValueStore {
  const q = (sql: PostgresClient, text: string, params: unknown[]) => sql.unsafe(text, params as never[], { prepare }) as Promise<Record<string, string>[]>

  const placeOf = (key: RecordKey): Place => {
    const owner = sessionOfKey(key)
    if (owner === undefined) {
      return key.length === 2 && key[0] === META_PART
        ? { table: n.meta, cols: [['key', 'text']], vals: [key[1]], value: 'value' }
        : { table: n.records, cols: [['key', 'text']], vals: [flat(key)], value: 'value' }
    }
    if (key.length === 3 && key[2] === CHECKPOINT_PART) return { table: n.checkpoints, owner, cols: [['session_id', 'text']], vals: [owner], value: 'row' }
    const at = key.length === 4 && key[2] === HISTORY_PART ? positionOf(key[3]) : undefined
    if (at !== undefined)
      return {
        table: n.history,
        owner,
        cols: [
          ['session_id', 'text'],
          ['at', 'int8'],
        ],
        vals: [owner, at],
        value: 'row',
      }
    return {
      table: n.sessionRecords,
      owner,
      cols: [
        ['session_id', 'text'],
        ['key', 'text'],
      ],
      vals: [owner, flat(key.slice(2))],
      value: 'value',
    }
  }
  const where = (p: Place) => p.cols.map(([c, t], i) => `${c} = $${i + 1}::${t}`).join(' AND ')

  const store: KeyValueStore = {
    get: (key) =>
      run('record read', async (sql) => {
        assertKey(key)
        const p = placeOf(key)
        const rows = await q(sql, `SELECT ${p.value} AS v FROM ${p.table} WHERE ${where(p)}`, p.vals)
        return rows[0]?.v
      }),
    put: (key, value, options) =>
      run('record write', async (sql) => {
        assertKey(key)
        const p = placeOf(key)
        const cols = p.cols.map(([c]) => c).join(', ')
        const params = p.cols.map(([, t], i) => `$${i + 1}::${t}`)
        const v = `$${p.cols.length + 1}::text`
        const relaxed = options?.durability === 'durable' ? '' : `, (SELECT set_config('synchronous_commit', 'off', true)) AS relaxed`
        const upsert = `ON CONFLICT (${cols}) DO UPDATE SET ${p.value} = EXCLUDED.${p.value}`
        if (p.owner === undefined) {
          await q(sql, `INSERT INTO ${p.table} (${cols}, ${p.value}) SELECT ${params.join(', ')}, ${v} FROM (SELECT 1) AS one${relaxed} ${upsert}`, [
            ...p.vals,
            value,
          ])
          return
        }
        try {
          // Written only while the session is there.
          const done = await q(
            sql,
            `INSERT INTO ${p.table} (${cols}, ${p.value}) SELECT s.id, ${[...params.slice(1), v].join(', ')} FROM ${n.sessions} s${relaxed} WHERE s.id = $1::text ${upsert} RETURNING 1 AS ok`,
            [...p.vals, value],
          )
          if (done.length === 0) throw notFoundForKey(p.owner, key)
        } catch (err) {
          if (codeOf(err) === '23503') throw notFoundForKey(p.owner, key) // deleted between the select and the insert
          throw err
        }
      }),
    delete: (key) =>
      run('record delete', async (sql) => {
        assertKey(key)
        const p = placeOf(key)
        await q(sql, `DELETE FROM ${p.table} WHERE ${where(p)}`, p.vals)
      }),
    list: (prefix, range) =>
      run('record read', async (sql) => {
        const r = resolveKeyRange(prefix, range)
        if (prefix.length > 0 && prefix[0] !== 'session' && prefix[0] !== META_PART) {
          // Only the store's own records hold such keys (the session index's among them): a
          // range of their primary key, read in its order, so a page costs its keys however many
          // the table holds. The prefix's keys are those between it and it with its last
          // separator ('+') raised to the next character (',').
          const rows = await q(sql, recordsRangeSql(n.records), [rangeStart(r), `${r.prefix.slice(0, -1)},`, r.limit])
          return rows.map((row) => unflat(row.k!))
        }
        const owner = prefix.length >= 2 ? sessionOfKey([...prefix.slice(0, 2), 'x']) : undefined
        // Every key as its flat form, filtered and ordered in the "C" collation: the order of the parts.
        const only = owner === undefined ? '' : ' WHERE session_id = $4'
        const sessions = [
          `SELECT 'session${S}' || session_id || '${S}' || key AS k FROM ${n.sessionRecords}${only}`,
          `SELECT 'session${S}' || session_id || '${S}${CHECKPOINT_PART}' FROM ${n.checkpoints}${only}`,
          `SELECT 'session${S}' || session_id || '${S}${HISTORY_PART}${S}' || lpad(at::text, 16, '0') FROM ${n.history}${only}`,
        ]
        const all =
          owner !== undefined
            ? sessions.join(' UNION ALL ')
            : [`SELECT key AS k FROM ${n.records}`, `SELECT '${META_PART}${S}' || key FROM ${n.meta} WHERE key ~ '^[A-Za-z0-9_-]{1,128}$'`, ...sessions].join(
                ' UNION ALL ',
              )
        const rows = await q(
          sql,
          `SELECT k FROM (${all}) AS flat WHERE starts_with(k, $1) AND ($2::text IS NULL OR k COLLATE "C" > $2::text COLLATE "C") ORDER BY k COLLATE "C" LIMIT $3`,
          owner === undefined ? [r.prefix, r.after ?? null, r.limit] : [r.prefix, r.after ?? null, r.limit, owner],
        )
        return rows.map((row) => unflat(row.k!))
      }),
    getMany: (keys) =>
      run('record read', async (sql) => {
        for (const key of keys) assertKey(key)
        const places = keys.map(placeOf)
        const values: (string | undefined)[] = []
        for (const [table, at] of byTable(places)) {
          const p = places[at[0]!]!
          const { input, on, params } = unnested(
            p,
            at.map((i) => places[i]!),
          )
          const rows = await q(sql, `SELECT ${p.cols.map((_, i) => `u.u${i}`).join(', ')}, t.${p.value} AS v FROM ${table} t JOIN ${input} ON ${on}`, params)
          const found = new Map(rows.map((r) => [idOfRow(p, r), r.v]))
          for (const i of at) values[i] = found.get(idOf(places[i]!))
        }
        return values
      }),
    // A statement a table and kind (put, delete), in one transaction: so a group of the session
    // index's rows costs a round trip or two, not one a record. Rows are locked in key order (two
    // engines writing the same rows cannot deadlock), and a deadlock with other writes is tried again.
    writeMany: (writes, options) =>
      run('record write', async (sql) => {
        assertWrites(writes)
        const places = writes.map(([key]) => placeOf(key))
        for (let attempt = 1; ; attempt++) {
          let missing: number[]
          try {
            missing = await sql.begin((tx: PostgresClient) => writeGroups(tx, writes, places, options?.durability === 'durable'))
          } catch (err) {
            if (codeOf(err) === '40P01' && attempt < DEADLOCK_TRIES) continue
            if (codeOf(err) !== '23503') throw err
            // A session deleted meanwhile (nothing written): the one the database names.
            const gone = /\(session_id\)=\(([^)]*)\)/.exec(String((err as { detail?: unknown }).detail))?.[1]
            const i = Math.max(
              0,
              places.findIndex((p, k) => p.owner !== undefined && writes[k]![1] !== undefined && (gone === undefined || p.owner === gone)),
            )
            throw notFoundForKey(places[i]!.owner ?? (gone as SessionId), writes[i]![0])
          }
          const first = missing.sort((a, b) => a - b)[0]
          if (first !== undefined) throw notFoundForKey(places[first]!.owner!, writes[first]![0])
          return
        }
      }),
  }

  /** writeMany's statements in `tx`: the indexes of puts not made (their session gone). */
  async function writeGroups(tx: PostgresClient, writes: readonly RecordWrite[], places: readonly Place[], durable: boolean): Promise<number[]> {
    const missing: number[] = []
    if (!durable) await q(tx, `SELECT set_config('synchronous_commit', 'off', true)`, [])
    for (const [table, unsorted] of byTable(places)) {
      const at = unsorted.sort((a, b) => compareIds(idOf(places[a]!), idOf(places[b]!)))
      const p = places[at[0]!]!
      const order = p.cols.map((_, i) => `u.u${i}`).join(', ')
      const dels = at.filter((i) => writes[i]![1] === undefined)
      const puts = at.filter((i) => writes[i]![1] !== undefined)
      if (dels.length > 0) {
        const { input, on, params } = unnested(
          p,
          dels.map((i) => places[i]!),
        )
        await q(tx, `SELECT 1 FROM ${table} t JOIN ${input} ON ${on} ORDER BY ${order} FOR UPDATE OF t`, params)
        await q(tx, `DELETE FROM ${table} t USING ${input} WHERE ${on}`, params)
      }
      if (puts.length === 0) continue
      const cols = p.cols.map(([c]) => c).join(', ')
      const { input, params } = unnested(
        p,
        puts.map((i) => places[i]!),
        puts.map((i) => writes[i]![1]!),
      )
      // A session's rows only while the session is there (as put).
      const only = p.owner === undefined ? '' : ` JOIN ${n.sessions} s ON s.id = u.u0`
      const done = await q(
        tx,
        `INSERT INTO ${table} (${cols}, ${p.value}) SELECT ${order}, u.v FROM ${input}${only} ORDER BY ${order} ON CONFLICT (${cols}) DO UPDATE SET ${p.value} = EXCLUDED.${p.value} RETURNING ${p.cols.map(([c], i) => `${c} AS u${i}`).join(', ')}`,
        params,
      )
      if (done.length === puts.length) continue
      const made = new Set(done.map((r) => idOfRow(p, r)))
      missing.push(...puts.filter((i) => !made.has(idOf(places[i]!))))
    }
    return missing
  }

  return store
}

/** Places by their table, the tables in name order (so two writers lock them in one order): each table's indexes into `places`. */
function byTable(places: readonly Place[]): Map<string, number[]> {
  const out = new Map<string, number[]>()
  for (const table of [...new Set(places.map((p) => p.table))].sort()) out.set(table, [])
  for (const [i, p] of places.entries()) out.get(p.table)!.push(i)
  return out
}

/** A place's key columns as one string, and the same of a row read back with them as u0, u1…: equal for one key. */
const idOf = (p: Place): string => p.vals.map(String).join(S)
const idOfRow = (p: Place, row: Record<string, string>): string => p.cols.map((_, i) => String(row[`u${i}`])).join(S)

/**
 * The keys of `places` (all of `p`'s table), and `values` when given, as arrays unnested into
 * `u` (its columns u0, u1… and v): the `input`, the join of `t` with it (`on`), and the arrays.
 */
function unnested(p: Place, places: readonly Place[], values?: readonly string[]): { input: string; on: string; params: unknown[][] } {
  const types = [...p.cols.map(([, t]) => t), ...(values ? ['text'] : [])]
  const names = [...p.cols.map((_, i) => `u${i}`), ...(values ? ['v'] : [])]
  return {
    input: `unnest(${types.map((t, i) => `$${i + 1}::${t}[]`).join(', ')}) AS u(${names.join(', ')})`,
    on: p.cols.map(([c], i) => `t.${c} = u.u${i}`).join(' AND '),
    params: [...p.cols.map((_, c) => places.map((x) => x.vals[c])), ...(values ? [[...values]] : [])],
  }
}
