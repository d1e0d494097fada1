// The PostgreSQL store's tables at schema version 1, made with the adapter's own version-1 DDL
// (src/backends/postgres/schema.ts): for the tests of the parts that use the tables without the
// adapter (the lease locks, the growth channel), and for migrating a store of version 1.
import type { Sql } from 'postgres'
import { namesOf, V1 } from '../../src/backends/postgres/schema'

/** The version-1 DDL for schema `schema` (`[a-z_][a-z0-9_]*`), as one script. */
export function schemaV1(schema: string): string {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) throw new Error(`schema ${schema} must match ^[a-z_][a-z0-9_]{0,62}$`)
  return `${[`CREATE SCHEMA IF NOT EXISTS "${schema}"`, ...V1(namesOf(schema))].join(';\n')};`
}

let next = 0

/** Creates a fresh schema with the v1 tables; its name. */
export async function createSchemaV1(sql: Sql, prefix = 't'): Promise<string> {
  const schema = `${prefix}_${process.pid}_${next++}`
  await sql.unsafe(schemaV1(schema)).simple()
  return schema
}
