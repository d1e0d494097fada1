// Frames from the worker are checked before the app sees them: the envelope strictly, the
// built-in values against their view schemas, and any app value as plain JSON.
import { SESSION_ID_PATTERN } from './model'
import type { Frame } from './protocol'
import { catalogViewSchema } from './units/catalog'
import { subagentViewSchema } from './units/subagent'
import { timingViewSchema } from './units/timing'
import { assertPlainJson, isPlainObject } from './validate'

const BUILTIN_VIEWS: Record<string, { safeParse(v: unknown): { success: boolean } }> = {
  subagent: subagentViewSchema,
  subagentCatalog: catalogViewSchema.nullable(),
  subagentTiming: timingViewSchema.nullable(),
}

/** The reason a frame is unacceptable, or undefined when it is fine. */
export function frameProblem(frame: unknown): string | undefined {
  if (!isPlainObject(frame)) return 'not an object'
  const { sessionId, seq, values, faults } = frame as Partial<Frame>
  if (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId)) return 'bad sessionId'
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1) return 'bad seq'
  if (!isPlainObject(values) || !isPlainObject(faults)) return 'bad values or faults'
  for (const [key, fault] of Object.entries(faults)) if (fault !== 'corrupt') return `bad fault for ${key}`
  for (const [key, value] of Object.entries(values)) {
    const schema = BUILTIN_VIEWS[key]
    if (schema && !schema.safeParse(value).success) return `value of ${key} fails its view schema`
    try {
      assertPlainJson(value, key)
    } catch {
      return `value of ${key} is not plain JSON`
    }
  }
  return undefined
}

export function isFrame(frame: unknown): frame is Frame {
  return frameProblem(frame) === undefined
}
