// The tables, created and migrated by the adapter in its own schema. Version 1 is the shared
// layout of the PostgreSQL store (sessions, events keyed (session_id, seq) so the database
// itself refuses a gap's duplicate, checkpoints, and the lease table and token sequence that
// the write locks use), plus one index of ours: ids in byte order ("C"), which is the order of
// compareIds whatever the database's own collation. Version 2 adds the function append_batch,
// which makes a group commit one statement (one round trip) instead of a transaction of four,
// and sends growth notices on a channel per session, with the new events when they are small.
// The tables are those of version 1, so a process of an older sessionfold still writing them
// stays correct (it refuses to open a store newer than it knows, but one already open goes on;
// its notices go to the old channel, and newer followers find its appends by their poll).
import { SessionfoldError } from '../../core/errors'
import type { PostgresClient } from './options'

/** The newest schema version this code knows. */
export const SCHEMA_VERSION = 7

/** Quoted, schema-qualified names (the schema is checked by settingsOf: `[a-z_][a-z0-9_]*`). */
export interface Names {
  schema: string
  sessions: string
  events: string
  checkpoints: string
  history: string
  leases: string
  versions: string
  feed: string
  meta: string
  /** Key-value records (records.ts): the store's own, and those of a session. */
  records: string
  sessionRecords: string
  /** The schema's name as given (validated, unquoted). */
  bare: string
}

export function namesOf(schema: string): Names {
  const s = `"${schema}"`
  return {
    schema: s,
    sessions: `${s}.sessions`,
    events: `${s}.events`,
    checkpoints: `${s}.checkpoints`,
    history: `${s}.history`,
    leases: `${s}.leases`,
    versions: `${s}.schema_version`,
    feed: `${s}.feed`,
    meta: `${s}.meta`,
    records: `${s}.records`,
    sessionRecords: `${s}.session_records`,
    bare: schema,
  }
}

export const V1 = (n: Names): string[] => [
  `CREATE TABLE ${n.versions} (version int NOT NULL)`,
  `CREATE TABLE ${n.sessions} (id text PRIMARY KEY, header jsonb NOT NULL, length bigint NOT NULL DEFAULT 0)`,
  `CREATE TABLE ${n.events} (session_id text NOT NULL REFERENCES ${n.sessions}(id) ON DELETE CASCADE, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq))`,
  `CREATE TABLE ${n.checkpoints} (session_id text PRIMARY KEY REFERENCES ${n.sessions}(id) ON DELETE CASCADE, row text NOT NULL)`,
  `CREATE SEQUENCE ${n.schema}.lease_tokens`,
  `CREATE TABLE ${n.leases} (session_id text PRIMARY KEY, token bigint NOT NULL, owner text NOT NULL, expires_at timestamptz NOT NULL)`,
  `CREATE INDEX sessions_id_bytes ON ${n.sessions} (id COLLATE "C")`,
  `INSERT INTO ${n.versions} (version) VALUES (1)`,
]

/**
 * Version 2: append_batch, a group of appends (to one session or many) checked and written in
 * one statement, so in one transaction and one round trip. Arguments, by position:
 *  - p_ids: the distinct sessions of the group; p_tokens: the write-lease token this engine
 *    holds on each (NULL where it holds none: that session's appends are not fenced);
 *    p_channels: each one's growth channel (channel.ts);
 *  - per append: a_idx (its session's position in p_ids), a_from (its first seq) and a_count
 *    (its number of events);
 *  - per event, in append order: e_app (its append's position), e_seq, e_body (its JSON);
 *  - p_relaxed: commit with synchronous_commit off.
 * The session rows are locked first, in id order (so two writers never deadlock), and each
 * append is judged in order: codes[i] is 0 (written), 1 (no such session), 2 (its lease is not
 * held with that token) or 3 (a_from is not the length then); seen[i] is the session's length
 * when append i was judged. Only appends coded 0 are written; each session that grew gets its
 * new length and one growth notice on its channel, delivered by the server at commit:
 * `<id>:<length>`, or when the events it gained are small (under NOTICE_TAIL_BYTES of JSON)
 * `<id>:<length>:<from>:[<event>,…]` with those events, so that a follower folds them without
 * reading them back.
 */
const NOTICE_TAIL_BYTES = 7000 // a NOTIFY payload must stay under 8000 bytes
const appendBatch = (n: Names, feed: boolean, lines = false): string =>
  `CREATE OR REPLACE FUNCTION ${n.schema}.${lines ? 'append_group' : 'append_batch'}(
    p_ids text[], p_tokens int8[], p_channels text[], a_idx int4[], a_from int8[], a_count int4[],
    e_app int4[], e_seq int8[], ${lines ? 'p_bodies text' : 'e_body text[]'}, p_relaxed boolean,
    OUT codes int2[], OUT seen int8[])
  LANGUAGE plpgsql AS $fn$
  DECLARE${
    lines
      ? `
    e_body text[] := string_to_array(p_bodies, E'\\n');`
      : ''
  }
    lens int8[];
    base int8[];
    held boolean[];
    grown boolean[];
    k int4;
    len int8;
    tail text;
  BEGIN
    IF p_relaxed THEN
      PERFORM set_config('synchronous_commit', 'off', true);
    END IF;
    IF cardinality(a_idx) = 1 THEN
      -- One append (a writer appending one batch after another): the checks, rows and notice
      -- of the general path below, on scalars, in about half its time (version 6).
      SELECT s.length INTO len FROM ${n.sessions} s WHERE s.id = p_ids[1] FOR UPDATE;
      IF NOT FOUND THEN
        codes := '{1}';
        seen := '{NULL}';
        RETURN;
      END IF;
      seen := ARRAY[len];
      IF p_tokens[1] IS NOT NULL THEN
        PERFORM 1 FROM ${n.leases} WHERE session_id = p_ids[1] AND token = p_tokens[1] FOR SHARE;
        IF NOT FOUND THEN
          codes := '{2}';
          RETURN;
        END IF;
      END IF;
      IF a_count[1] > 0 AND a_from[1] <> len THEN
        codes := '{3}';
        RETURN;
      END IF;
      codes := '{0}';
      IF a_count[1] = 0 THEN
        RETURN;
      END IF;
      INSERT INTO ${n.events} (session_id, seq, body) SELECT p_ids[1], e.seq, e.body FROM unnest(e_seq, e_body) AS e(seq, body);
      UPDATE ${n.sessions} SET length = len + a_count[1] WHERE id = p_ids[1];
      tail := array_to_string(e_body, ',');
      PERFORM pg_notify(p_channels[1], p_ids[1] || ':' || (len + a_count[1]) ||
        CASE WHEN octet_length(tail) + 1 < ${NOTICE_TAIL_BYTES} - octet_length(p_ids[1]) THEN ':' || len || ':[' || tail || ']' ELSE '' END);${
          feed
            ? `
      INSERT INTO ${n.feed} (session_id, from_seq, to_seq) VALUES (p_ids[1], len, len + a_count[1]);`
            : ''
        }
      RETURN;
    END IF;
    PERFORM 1 FROM (SELECT id FROM ${n.sessions} WHERE id = ANY(p_ids) ORDER BY id FOR UPDATE) AS locked;
    SELECT array_agg(s.length ORDER BY u.ord) INTO lens
      FROM unnest(p_ids) WITH ORDINALITY AS u(id, ord) LEFT JOIN ${n.sessions} s ON s.id = u.id;
    SELECT array_agg(l.session_id IS NOT NULL ORDER BY u.ord) INTO held
      FROM unnest(p_ids, p_tokens) WITH ORDINALITY AS u(id, token, ord)
      LEFT JOIN LATERAL (SELECT session_id FROM ${n.leases} WHERE session_id = u.id AND token = u.token FOR SHARE) l ON true;
    base := lens;
    grown := array_fill(false, ARRAY[cardinality(p_ids)]);
    codes := array_fill(0::int2, ARRAY[cardinality(a_idx)]);
    seen := array_fill(NULL::int8, ARRAY[cardinality(a_idx)]);
    FOR i IN 1..cardinality(a_idx) LOOP
      k := a_idx[i];
      seen[i] := lens[k];
      IF lens[k] IS NULL THEN
        codes[i] := 1;
      ELSIF p_tokens[k] IS NOT NULL AND NOT held[k] THEN
        codes[i] := 2;
      ELSIF a_count[i] > 0 AND a_from[i] <> lens[k] THEN
        codes[i] := 3;
      ELSIF a_count[i] > 0 THEN
        lens[k] := lens[k] + a_count[i];
        grown[k] := true;
      END IF;
    END LOOP;
    INSERT INTO ${n.events} (session_id, seq, body)
      SELECT p_ids[a_idx[e.app]], e.seq, e.body FROM unnest(e_app, e_seq, e_body) AS e(app, seq, body) WHERE codes[e.app] = 0;
    UPDATE ${n.sessions} s SET length = u.len FROM unnest(p_ids, lens, grown) AS u(id, len, g) WHERE u.g AND s.id = u.id;
    PERFORM pg_notify(p_channels[t.k], p_ids[t.k] || ':' || lens[t.k] ||
        CASE WHEN t.bytes < ${NOTICE_TAIL_BYTES} - octet_length(p_ids[t.k]) THEN ':' || base[t.k] || ':[' ||
          (SELECT string_agg(e.body, ',' ORDER BY e.seq) FROM unnest(e_app, e_seq, e_body) AS e(app, seq, body) WHERE codes[e.app] = 0 AND a_idx[e.app] = t.k) || ']'
        ELSE '' END)
      FROM (SELECT a_idx[e.app] AS k, sum(octet_length(e.body) + 1) AS bytes
              FROM unnest(e_app, e_body) AS e(app, body) WHERE codes[e.app] = 0 GROUP BY 1) AS t
      WHERE grown[t.k];${
        feed
          ? `
    INSERT INTO ${n.feed} (session_id, from_seq, to_seq)
      SELECT p_ids[g.k], base[g.k], lens[g.k] FROM generate_subscripts(p_ids, 1) AS g(k) WHERE grown[g.k];`
          : ''
      }
  END
  $fn$`
const V2 = (n: Names): string[] => [appendBatch(n, false), `UPDATE ${n.versions} SET version = 2`]

/**
 * Version 3: the change feed and the meta records. `feed` holds a row per creation and per
 * session grown by append_batch, numbered by the writing transaction's id (xid8) and a
 * sequence: a reader takes only rows of transactions older than every one still running
 * (pg_snapshot_xmin), so it never passes a row that commits later with a smaller number.
 * `meta` holds the feed's identity ('#feed') and the store's own small records.
 */
const V3 = (n: Names): string[] => [
  `CREATE TABLE ${n.feed} (xid xid8 NOT NULL DEFAULT pg_current_xact_id(), pos bigint GENERATED ALWAYS AS IDENTITY, session_id text NOT NULL, from_seq bigint NOT NULL, to_seq bigint NOT NULL, PRIMARY KEY (xid, pos))`,
  `CREATE TABLE ${n.meta} (key text PRIMARY KEY, value text NOT NULL)`,
  `INSERT INTO ${n.meta} (key, value) VALUES ('#feed', replace(gen_random_uuid()::text, '-', ''))`,
  appendBatch(n, true),
  `UPDATE ${n.versions} SET version = 3`,
]

/** Version 4: history rows (time travel), a row per session and position, deleted with their session. */
const V4 = (n: Names): string[] => [
  `CREATE TABLE ${n.history} (session_id text NOT NULL REFERENCES ${n.sessions}(id) ON DELETE CASCADE, at bigint NOT NULL, row text NOT NULL, PRIMARY KEY (session_id, at))`,
  `UPDATE ${n.versions} SET version = 4`,
]

/**
 * Version 5: the events table's foreign key to sessions is dropped. It checked every inserted
 * event against its session row (a trigger per row: about 0.3 ms of a 100-event append), which
 * append_batch has already locked and checked; deleteSession now deletes a session's events
 * itself, in the transaction that deletes its row, and createSession first clears events a
 * session of the same id left behind (only a process of an older sessionfold, still open when
 * the store moved to this version, deletes by the cascade alone). append_batch joins the events
 * of a growth notice only when they fit in it (version 2 joined them whatever their size).
 * Checkpoint and history rows keep their keys: they are written a row at a time.
 */
const V5 = (n: Names): string[] => [
  `ALTER TABLE ${n.events} DROP CONSTRAINT IF EXISTS events_session_id_fkey`,
  appendBatch(n, true),
  `UPDATE ${n.versions} SET version = 5`,
]

/**
 * Version 6, two changes to the append's statement; the tables are unchanged.
 *  - A group of one append (a writer's batches one after another, the common case) goes on a
 *    path of its own: the same checks, rows and notice, with scalars in place of the general
 *    path's arrays and grouped notice, which made up about half of the statement's time on
 *    the server (0.4-0.5 ms of 1.1 for a 100-event batch).
 *  - append_group, which this version's code calls, is append_batch with the events' JSON as
 *    one text of lines (stored JSON is one line: eventFromBody, and the adapter checks) in
 *    place of a text[]: an array of JSON strings is quoted and escaped by the driver and
 *    parsed back by the server, which cost a 100-event batch 0.15-0.35 ms of the client's CPU.
 * append_batch stays, with the same new path, for a process of an older sessionfold still open.
 */
const V6 = (n: Names): string[] => [appendBatch(n, true), appendBatch(n, true, true), `UPDATE ${n.versions} SET version = 6`]

/**
 * Version 7: key-value records (records.ts), the store's and each session's; a session's are
 * deleted with it by their foreign key, so a process of an older sessionfold deleting a session
 * takes them too. Keys in the "C" collation: the order of their parts.
 */
const V7 = (n: Names): string[] => [
  `CREATE TABLE ${n.records} (key text COLLATE "C" PRIMARY KEY, value text NOT NULL)`,
  `CREATE TABLE ${n.sessionRecords} (session_id text NOT NULL REFERENCES ${n.sessions}(id) ON DELETE CASCADE, key text COLLATE "C" NOT NULL, value text NOT NULL, PRIMARY KEY (session_id, key))`,
  `UPDATE ${n.versions} SET version = 7`,
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
    const [row] = (await q.unsafe(
      `SELECT EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relname = 'schema_version') AS present`,
      [schema],
    )) as { present: boolean }[]
    if (!row?.present) return undefined
    const [v] = (await q.unsafe(`SELECT max(version) AS version FROM ${n.versions}`)) as { version: number | null }[]
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
    if (version === undefined) {
      const [exists] = (await tx.unsafe(`SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1) AS present`, [schema])) as { present: boolean }[]
      if (!exists?.present) await tx.unsafe(`CREATE SCHEMA ${n.schema}`)
      for (const statement of V1(n)) await tx.unsafe(statement)
    }
    // Each later version's steps, from the one the store is at; each ends by setting its version.
    if ((version ?? 1) < 2) for (const statement of V2(n)) await tx.unsafe(statement)
    if ((version ?? 1) < 3) for (const statement of V3(n)) await tx.unsafe(statement)
    if ((version ?? 1) < 4) for (const statement of V4(n)) await tx.unsafe(statement)
    if ((version ?? 1) < 5) for (const statement of V5(n)) await tx.unsafe(statement)
    if ((version ?? 1) < 6) for (const statement of V6(n)) await tx.unsafe(statement)
    if ((version ?? 1) < 7) for (const statement of V7(n)) await tx.unsafe(statement)
  })
}

/**
 * A store restored onto another cluster (pg_dump, then restore) keeps its feed, whose positions
 * are transaction ids of the cluster that wrote it; a new cluster's ids start below them, so its
 * writes would sort before the restored entries, and a cursor made before the restore would
 * never see them. Found so (the stores of 0.1, restored): a feed whose newest entry is ahead of
 * every transaction this cluster has begun is from another cluster. Its entries are hints (the
 * logs are the data), so they are dropped and the feed gets a new identity: every cursor made
 * on it walks every session again, which sends each from where the other side is.
 */
export async function settleFeed(sql: PostgresClient, schema: string): Promise<void> {
  const n = namesOf(schema)
  const ahead = `SELECT EXISTS (SELECT 1 FROM ${n.feed} WHERE xid >= pg_snapshot_xmax(pg_current_snapshot())) AS ahead`
  const [row] = (await sql.unsafe(ahead)) as { ahead: boolean }[]
  if (!row?.ahead) return
  await sql.begin(async (tx: PostgresClient) => {
    await tx.unsafe(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [LOCK_SPACE, schema])
    const [again] = (await tx.unsafe(ahead)) as { ahead: boolean }[]
    if (!again?.ahead) return // another process settled it meanwhile
    await tx.unsafe(`DELETE FROM ${n.feed}`)
    await tx.unsafe(`UPDATE ${n.meta} SET value = replace(gen_random_uuid()::text, '-', '') WHERE key = '#feed'`)
  })
}
