// A Response whose status, headers and whole body are kept as they were given, for
// `toNodeListener` to write straight to node:http: undici's Response (its Headers checked and
// sorted one by one, its body a web stream read back chunk by chunk) was about a tenth of the
// server thread's CPU of a small Durable Streams append. To anyone else it is a Response
// (`instanceof Response`, every member): `status` and `ok` come off what was given, and
// anything more (`headers`, `body`, `text()`, `clone()` ...) makes the platform's own Response
// first and answers from it. The mirror of node.ts's light Request. Only toNodeListener is handed
// one (answerTo): to native code that checks a Response's internal slots it is no Response.

/** What a light Response keeps: read by `toNodeListener`. */
export interface Answer {
  status: number
  headers: Record<string, string>
  /** The whole body (none for null). */
  body: string | Uint8Array | null
}

/** The symbol under which a light Response keeps its `Answer`. */
const ANSWER = Symbol('answer')

interface LightResponse {
  [ANSWER]: Answer
  [REAL]?: Response
}

const REAL = Symbol('real')

/** A Response of `body` (whole), `status` and `headers`: `new Response(body, { status, headers })`, cheaper to serve. */
export function respond(body: string | Uint8Array | null, status: number, headers: Record<string, string>): Response {
  const light = Object.create(LIGHT_RESPONSE) as LightResponse
  light[ANSWER] = { status, headers, body }
  return light as unknown as Response
}

/**
 * What `response` keeps when it is a light one (made by `respond`) that nobody looked into, to
 * be written as it is; undefined for any other (its platform Response, when one was made, may
 * have had its headers changed since).
 */
export function answerOf(response: Response): Answer | undefined {
  const light = response as unknown as Partial<LightResponse>
  return light[REAL] ? undefined : light[ANSWER]
}

/** Set by toNodeListener on the Request it hands a handler: its answer may be a light Response. */
export const SERVED_BY_NODE = Symbol('served by toNodeListener')

/**
 * The answer to `request`: a light Response as it is when toNodeListener serves it (it writes it
 * straight out), else the platform's own, made now: a server that checks a Response's internals
 * (Deno.serve, Bun.serve, workers) gets a real one.
 */
export function answerTo(request: Request, response: Response): Response {
  const light = response as unknown as Partial<LightResponse>
  if (!light[ANSWER] || (request as unknown as Record<symbol, unknown>)[SERVED_BY_NODE]) return response
  return realOf(light as LightResponse)
}

function realOf(light: LightResponse): Response {
  if (light[REAL]) return light[REAL]
  const { body, status, headers } = light[ANSWER]
  light[REAL] = new Response(body as BodyInit | null, { status, headers })
  return light[REAL]
}

const LIGHT_RESPONSE: object = Object.create(Response.prototype, {
  status: {
    get(this: LightResponse) {
      return this[ANSWER].status
    },
  },
  ok: {
    get(this: LightResponse) {
      return this[ANSWER].status >= 200 && this[ANSWER].status <= 299
    },
  },
  // headers: the real one's (a caller may change them, and then they are what goes out).
})
delegateTo(LIGHT_RESPONSE, Response.prototype, realOf)

/**
 * Gives `light` (a light Request or Response, made on `proto`) every member of `proto` it does
 * not have itself, each answered by the platform's own object that `real` makes (once) for it.
 */
export function delegateTo<T>(light: object, proto: object, real: (self: T) => object): void {
  for (const name of Object.getOwnPropertyNames(proto)) {
    if (name === 'constructor' || Object.hasOwn(light, name)) continue
    const member = Object.getOwnPropertyDescriptor(proto, name)!
    const of = (self: T) => real(self) as unknown as Record<string, (...args: unknown[]) => unknown>
    if (typeof member.value === 'function') {
      Object.defineProperty(light, name, {
        value(this: T, ...args: unknown[]) {
          return of(this)[name]!(...args)
        },
      })
    } else if (member.get) {
      Object.defineProperty(light, name, {
        get(this: T) {
          return of(this)[name]
        },
      })
    }
  }
}
