// Contract: §3 projections, §6 client API — ProjectionMap keys type get and subscribe; apps merge in their own (docs/CONTRACT.md)
// Type-level tests, checked by `tsc --noEmit` (part of npm test): keys of ProjectionMap type
// `get` and `subscribe`, an app's own key merges in, a wrong key does not compile.
import { expectTypeOf } from 'vitest'
import type {
  CatalogEntry,
  ProjectionDefinition,
  ProjectionSnapshot,
  Session,
  SessionfoldError,
  SubagentListEntry,
  SubagentView,
  TimingView,
} from 'sessionfold'
import { defineProjection, isSessionfoldError } from 'sessionfold'
import { chunkedListSchema } from 'sessionfold/worker'
import { z } from 'zod'
import * as zm from 'zod/mini'

declare module 'sessionfold' {
  interface ProjectionMap {
    testTokens: { total: number }
  }
}

export const testTokens = defineProjection({
  key: 'testTokens',
  stateVersion: 1,
  stateSchema: z.object({ total: z.number() }),
  init: () => ({ total: 0 }),
  apply: (s, e) => (e.type === 'llm/usage' ? { total: s.total + (e.data as { tokens: number }).tokens } : s),
  view: { schema: z.object({ total: z.number() }), view: (s) => s },
})

declare const session: Session

expectTypeOf(session.projections.get('subagentCatalog')).toEqualTypeOf<CatalogEntry[] | null>()
expectTypeOf(session.projections.get('subagent')).toEqualTypeOf<SubagentView | null>()
expectTypeOf(session.projections.get('subagentTiming')).toEqualTypeOf<TimingView | null>()
expectTypeOf(session.projections.get('testTokens')).toEqualTypeOf<{ total: number } | null>()

session.projections.subscribe('testTokens', (value, meta) => {
  expectTypeOf(value).toEqualTypeOf<{ total: number } | null>()
  expectTypeOf(meta.seq).toEqualTypeOf<number>()
  expectTypeOf(meta.error).toEqualTypeOf<SessionfoldError | undefined>()
})
session.projections.subscribe((snapshot, meta) => {
  expectTypeOf(meta.seq).toEqualTypeOf<number>()
  expectTypeOf(meta.error).toEqualTypeOf<SessionfoldError | undefined>()
  expectTypeOf(snapshot.values.subagentTiming).toEqualTypeOf<TimingView | null>()
  expectTypeOf(snapshot.values.testTokens).toEqualTypeOf<{ total: number } | null>()
  expectTypeOf(snapshot).toEqualTypeOf<ProjectionSnapshot<import('sessionfold').ProjectionMap>>()
})

// @ts-expect-error: not a key of ProjectionMap
session.projections.get('testTokenz')
// @ts-expect-error: not a key of ProjectionMap
session.projections.subscribe('nope', () => {})
// @ts-expect-error: the listener gets the key's type
session.projections.subscribe('subagentTiming', (v: { total: number } | null) => v)

expectTypeOf(session.append<'app/x'>)
  .parameter(0)
  .toMatchTypeOf<{ type: string } | readonly { type: string }[]>()
expectTypeOf(session.listChildren).returns.resolves.toEqualTypeOf<SubagentListEntry[]>()
declare const row: SubagentListEntry
if (row.kind === 'diagnostic') expectTypeOf(row.reason).toEqualTypeOf<'corrupt' | 'unsupported' | 'unavailable'>()
else expectTypeOf(row.mode).toEqualTypeOf<'one-shot' | 'continuable' | 'external'>()

// Schemas are any zod 4 schema: classic, as above, or zod/mini; the state's type is inferred
// from either. Something that is not a zod 4 schema does not compile.
export const miniTokens = defineProjection({
  key: 'miniTokens',
  stateVersion: 1,
  stateSchema: zm.object({ total: zm.number() }),
  init: () => ({ total: 0 }),
  apply: (s, e) => (e.type === 'llm/usage' ? { total: s.total + 1 } : s),
  view: { schema: zm.object({ total: zm.number() }), view: (s) => s },
})
expectTypeOf(testTokens).toEqualTypeOf<ProjectionDefinition<{ total: number }, { total: number }>>()
expectTypeOf(miniTokens).toEqualTypeOf<ProjectionDefinition<{ total: number }, { total: number }>>()
defineProjection({
  key: 'notZod',
  stateVersion: 1,
  // @ts-expect-error: a look-alike with safeParse is not a zod 4 schema
  stateSchema: { safeParse: (v: unknown) => ({ success: true, data: v }) },
  init: () => 0,
  apply: (n: number) => n,
})

// chunkedListSchema (built with zod/mini) goes in a classic schema's shape; its output is a ChunkedList.
const listState = z.strictObject({ n: z.number(), entries: chunkedListSchema(z.strictObject({ id: z.string() })) })
expectTypeOf<z.infer<typeof listState>['entries']['toArray']>().returns.toEqualTypeOf<{ id: string }[]>()

// isSessionfoldError with codes narrows the code, and its false branch keeps an error an error
// (a SessionfoldError with another code), not `never`.
declare const failure: SessionfoldError
if (isSessionfoldError(failure, 'CLOSED', 'SESSION_LOCKED')) expectTypeOf(failure.code).toEqualTypeOf<'CLOSED' | 'SESSION_LOCKED'>()
else expectTypeOf(failure).toEqualTypeOf<SessionfoldError>()
declare const thrown: unknown
if (isSessionfoldError(thrown)) expectTypeOf(thrown.code).toEqualTypeOf<SessionfoldError['code']>()
