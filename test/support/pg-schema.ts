// The PostgreSQL store's tables, schema version 1, for tests of the parts that use them (the
// lease locks and the growth channel) before the adapter's migration creates them. The DDL is
// exactly the adapter's v1; when its migration lands, tests call that instead of this.
import type { Sql } from 'postgres'

/** The v1 DDL for schema `schema` (already validated by the caller: [a-z_][a-z0-9_]*). */
export function schemaV1(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`schema ${schema} must match ^[a-z_][a-z0-9_]{0,62}$`)
  const S = `"${schema}"`
  return `
CREATE SCHEMA IF NOT EXISTS ${S};
CREATE TABLE ${S}.schema_version (version int NOT NULL);
CREATE TABLE ${S}.sessions (id text PRIMARY KEY, header jsonb NOT NULL, length bigint NOT NULL DEFAULT 0);
CREATE TABLE ${S}.events (session_id text NOT NULL REFERENCES ${S}.sessions(id) ON DELETE CASCADE, seq bigint NOT NULL, body text NOT NULL, PRIMARY KEY (session_id, seq));
CREATE TABLE ${S}.checkpoints (session_id text PRIMARY KEY REFERENCES ${S}.sessions(id) ON DELETE CASCADE, row text NOT NULL);
CREATE SEQUENCE ${S}.lease_tokens;
CREATE TABLE ${S}.leases (session_id text PRIMARY KEY, token bigint NOT NULL, owner text NOT NULL, expires_at timestamptz NOT NULL);
INSERT INTO ${S}.schema_version (version) VALUES (1);
`
}

let next = 0

/** Creates a fresh schema with the v1 tables; its name. */
export async function createSchemaV1(sql: Sql, prefix = 't'): Promise<string> {
  const schema = `${prefix}_${process.pid}_${next++}`
  await sql.unsafe(schemaV1(schema)).simple()
  return schema
}
