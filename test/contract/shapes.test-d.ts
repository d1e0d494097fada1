// Contract: each wire shape that has both a TypeScript type and a zod schema (src/core/schemas.ts)
// is the same shape in both, in both directions: a field added to one and not the other fails
// tsc (`tsc --noEmit` is part of the tests). The hand checks of the client are tied to the same
// rules by test/contract/rules.test.ts.
import { expectTypeOf } from 'vitest'
import type { z } from 'zod/mini'
import type { LifecycleWitness, SessionEvent, SessionHeader } from '../../src/core/model'
import type { sessionEventSchema, sessionHeaderSchema, witnessSchema } from '../../src/core/schemas'

expectTypeOf<z.infer<typeof sessionHeaderSchema>>().toEqualTypeOf<SessionHeader>()
expectTypeOf<z.infer<typeof sessionEventSchema>>().toEqualTypeOf<SessionEvent>()
expectTypeOf<z.infer<typeof witnessSchema>>().toEqualTypeOf<LifecycleWitness>()
