// The tables, created and migrated by the adapter in its own schema. Version 1 is the shared
// layout of the PostgreSQL store (sessions, events keyed (session_id, seq) so the database
// itself refuses a gap's duplicate, checkpoints, and the lease table and token sequence that
// the write locks use), plus one index of ours: ids in byte order ("C"), which is the order of
// compareIds whatever the database's own collation.
import { SessionfoldError } from '../../src/errors'
import type { PostgresClient } from './options'

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = 1

/** Quoted, schema-qualified names (the schema is checked by settingsOf: `[a-z_][a-z0-9_]*`). */
export interface Names {
  schema: string
  sessions: string
  events: string
  checkpoints: string
  leases: string
  versions: string
  /** The LISTEN/NOTIFY channel of growth notices: `sessionfold:<schema>`. */
  channel: string
}

export function namesOf(schema: string): Names {
  const s = `"${schema}"`
  return {
    schema: s,
    sessions: `${s}.sessions`,
    events: `${s}.events`,
    checkpoints: `${s}.checkpoints`,
    leases: `${s}.leases`,
    versions: `${s}.schema_version`,
    channel: `sessionfold:${schema}`,
  }
}

const V1 = (n: Names): string[] => [
  `CREATE TABLE ${n.versions} (version int NOT NULL)`,
  `CREATE TABLE ${n.sessions} (id text PRIMARY KEY, header jsonb NOT NULL, length bigint NOT NULL DEFAULT 0)`,
  `CREATE TABLE ${n.events} (session_id text NOT NULL REFERENCES ${n.sessions}(id) ON DELETE CASCADE, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))`,
  `CREATE TABLE ${n.checkpoints} (session_id text PRIMARY KEY REFERENCES ${n.sessions}(id) ON DELETE CASCADE, row text NOT NULL)`,
  `CREATE SEQUENCE ${n.schema}.lease_tokens`,
  `CREATE TABLE ${n.leases} (session_id text PRIMARY KEY, token bigint NOT NULL, owner text NOT NULL, expires_at timestamptz NOT NULL)`,
  `CREATE INDEX sessions_id_bytes ON ${n.sessions} (id COLLATE "C")`,
  `INSERT INTO ${n.versions} (version) VALUES (1)`,
]

/** Advisory lock key space of sessionfold's migrations (the second key is the schema's hash). */
const LOCK_SPACE = 0x5e55f01d

function tooNew(schema: string, version: number): SessionfoldError {
  return new SessionfoldError(
    'STORAGE_UNAVAILABLE',
    `the PostgreSQL store in schema "${schema}" is at schema version ${version}, newer than this sessionfold knows (${SCHEMA_VERSION}): upgrade sessionfold to open it`,
  )
}

/**
 * Brings the schema to SCHEMA_VERSION, idempotently: when it is already there, one read; else
 * one transaction under an advisory transaction lock, so several processes opening the same
 * new store at once create it once (the others wait, then find it made).
 */
export async function migrate(sql: PostgresClient, schema: string): Promise<void> {
  const n = namesOf(schema)
  const current = async (q: PostgresClient): Promise<number | undefined> => {
    // The catalogs read with the statement's snapshot, not through to_regclass: a backend's
    // cache can still say "no such schema" after it waited on the lock for another's creation.
    const [row] = await q.unsafe(
      `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = 'schema_version') AS present`,
      [schema],
    ) as { present: boolean }[]
    if (!row?.present) return undefined
    const [v] = await q.unsafe(`SELECT max(version) AS version FROM ${n.versions}`) as { version: number | null }[]
    return v?.version ?? undefined
  }
  const seen = await current(sql)
  if (seen !== undefined && seen >= SCHEMA_VERSION) {
    if (seen > SCHEMA_VERSION) throw tooNew(schema, seen)
    return
  }
  await sql.begin(async (tx: PostgresClient) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [LOCK_SPACE, schema])
    const version = await current(tx)
    if (version !== undefined && version > SCHEMA_VERSION) throw tooNew(schema, version)
    if (version === SCHEMA_VERSION) return
    const [exists] = await tx.unsafe(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS present`, [schema]) as { present: boolean }[]
    if (!exists?.present) await tx.unsafe(`CREATE SCHEMA ${n.schema}`)
    // Future versions: `if (version === 1) ...` steps here, each ending with its version row.
    for (const statement of V1(n)) await tx.unsafe(statement)
  })
}
