// A request's body read within a bound, for the server's handlers (sync and Durable Streams):
// a declared length over it is refused before a byte is read, and a body that grows past it
// is cancelled there, so a hostile client cannot make the server hold more than the bound.

/** Where `toNodeListener` leaves a body it read whole on the Request it makes (no web stream to read it back from). */
export const WHOLE_BODY = Symbol('sessionfold.wholeBody')

/** The body's bytes; `over(detail)` is thrown past `max` bytes. */
export async function readBytes(request: Request, max: number, over: (detail: string) => Error): Promise<Uint8Array> {
  const declared = Number(request.headers.get('content-length') ?? Number.NaN)
  if (declared > max) throw over(`the body is ${declared} bytes, over the limit of ${max}`)
  const whole = (request as { [WHOLE_BODY]?: Uint8Array })[WHOLE_BODY]
  if (whole) {
    if (whole.byteLength > max) throw over(`the body is over the limit of ${max} bytes`)
    return whole
  }
  if (!request.body) return new Uint8Array(0)
  const reader = request.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > max) {
      await reader.cancel().catch(() => {})
      throw over(`the body is over the limit of ${max} bytes`)
    }
    chunks.push(value)
  }
  const all = new Uint8Array(size)
  let at = 0
  for (const c of chunks) {
    all.set(c, at)
    at += c.byteLength
  }
  return all
}
