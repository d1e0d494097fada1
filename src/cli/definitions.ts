// `events --definitions FILE`: the app's event definitions, from a JavaScript module of its own
// (the command line has no other way to know how an app's events changed shape).
import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { SessionfoldError } from '../core/errors'
import { checkedDefinitions, isEventDefinition as isDefinition, type EventDefinition } from '../core/events'

/**
 * The definitions module `file` exports: each export that is a definition, or a list of them
 * (`export const events = [a, b]`). INVALID_ARGUMENT when it cannot be loaded, holds none, or
 * holds a type twice or a reserved one.
 */
export async function loadDefinitions(file: string): Promise<readonly EventDefinition[]> {
  let exported: Record<string, unknown>
  try {
    exported = (await import(pathToFileURL(resolve(file)).href)) as Record<string, unknown>
  } catch (err) {
    throw new SessionfoldError('INVALID_ARGUMENT', `--definitions ${file} cannot be loaded: ${(err as Error)?.message ?? String(err)}`)
  }
  const found = new Set<EventDefinition>()
  for (const value of Object.values(exported)) {
    if (isDefinition(value)) found.add(value)
    else if (Array.isArray(value)) for (const v of value) if (isDefinition(v)) found.add(v)
  }
  if (found.size === 0) throw new SessionfoldError('INVALID_ARGUMENT', `--definitions ${file} exports no defineEvent() definition`)
  return checkedDefinitions([...found], `--definitions ${file}`)
}
