// Client: sessionfold/react — the hooks' types follow ProjectionMap keys (§3, §6); checked by tsc --noEmit
// Type-level tests (npm test runs tsc --noEmit): useProjection is typed by the key, an app's own
// key merges in (testTokens, declared in test/client/types.test-d.ts), a wrong key or a handle
// without projections does not compile, and useChildren's result is typed.
import { expectTypeOf } from 'vitest'
import type { CatalogEntry, ProjectionSnapshot, ProjectionMap, Session, SessionView, SessionfoldError, SubagentListEntry, TimingView } from 'sessionfold'
import { useChildren, useProjection, useSnapshot, type ChildrenResult } from 'sessionfold/react'

declare const session: Session
declare const view: SessionView | null

expectTypeOf(useProjection(session, 'subagentCatalog')).toEqualTypeOf<CatalogEntry[] | null>()
expectTypeOf(useProjection(view, 'subagentTiming')).toEqualTypeOf<TimingView | null>()
expectTypeOf(useProjection(session, 'testTokens')).toEqualTypeOf<{ total: number } | null>()
// @ts-expect-error not a projection key
useProjection(session, 'nope')
// @ts-expect-error a store is not a handle
useProjection({ listChildren: session.listChildren }, 'subagent')
expectTypeOf(useSnapshot(view)).toEqualTypeOf<ProjectionSnapshot<ProjectionMap> | null>()

const listed = useChildren(view, { recursive: true })
expectTypeOf(listed).toEqualTypeOf<ChildrenResult>()
expectTypeOf(listed.children).toEqualTypeOf<readonly SubagentListEntry[] | undefined>()
expectTypeOf(listed.error).toEqualTypeOf<SessionfoldError | undefined>()
expectTypeOf(listed.loading).toEqualTypeOf<boolean>()
// @ts-expect-error the hook passes its own signal
useChildren(session, { signal: new AbortController().signal })
