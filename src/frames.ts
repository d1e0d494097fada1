// Frames from the worker are checked before the app sees them: the envelope strictly, the
// built-in values against their view shapes, and any app value as plain JSON. Hand-written
// rather than zod, so the client loads no zod (its object schemas probe `new Function`, which a
// strict Content-Security-Policy reports) and stays small.
import { SESSION_ID_PATTERN } from './model'
import type { Frame } from './protocol'
import { assertPlainJson, isPlainObject } from './validate'

const nat = (v: unknown) => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
const time = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0
const label = (v: unknown) => v === undefined || (typeof v === 'string' && v.length >= 1 && v.length <= 256)
const only = (o: Record<string, unknown>, keys: string[]) => Object.keys(o).every((k) => keys.includes(k))

function subagent(v: unknown): boolean {
  if (v === null) return true
  if (!isPlainObject(v) || !only(v, ['mode', 'label', 'seq'])) return false
  return (v.mode === 'one-shot' || v.mode === 'continuable') && label(v.label) && nat(v.seq)
}

function catalog(v: unknown): boolean {
  if (v === null) return true
  return Array.isArray(v) && v.every((e) =>
    isPlainObject(e) && only(e, ['id', 'createdAt', 'mode', 'label', 'seq']) &&
    typeof e.id === 'string' && SESSION_ID_PATTERN.test(e.id) && time(e.createdAt) &&
    ['one-shot', 'continuable', 'unknown', 'external'].includes(e.mode as string) && label(e.label) && nat(e.seq))
}

function timing(v: unknown): boolean {
  if (v === null) return true
  return isPlainObject(v) && only(v, ['turns', 'settledMs', 'runningSince']) && nat(v.turns) && time(v.settledMs) &&
    (v.runningSince === null || (typeof v.runningSince === 'number' && Number.isFinite(v.runningSince)))
}

const BUILTIN_VIEWS: Record<string, (v: unknown) => boolean> = { subagent, subagentCatalog: catalog, subagentTiming: timing }

/** The reason a frame is unacceptable, or undefined when it is fine. */
export function frameProblem(frame: unknown): string | undefined {
  if (!isPlainObject(frame)) return 'not an object'
  const { sessionId, seq, values, faults } = frame as Partial<Frame>
  if (typeof sessionId !== 'string' || !SESSION_ID_PATTERN.test(sessionId)) return 'bad sessionId'
  if (typeof seq !== 'number' || !Number.isSafeInteger(seq) || seq < -1) return 'bad seq'
  if (!isPlainObject(values) || !isPlainObject(faults)) return 'bad values or faults'
  for (const [key, fault] of Object.entries(faults)) if (fault !== 'corrupt') return `bad fault for ${key}`
  for (const [key, value] of Object.entries(values)) {
    const check = BUILTIN_VIEWS[key]
    if (check && !check(value)) return `value of ${key} fails its view shape`
    try {
      assertPlainJson(value, key)
    } catch {
      return `value of ${key} is not plain JSON`
    }
  }
  return undefined
}
