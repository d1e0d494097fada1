// A TCP proxy in front of a throwaway cluster (test/support/postgres.ts) that plays the server's
// states a client meets in the field, deterministically, where stopping the real server only
// gives some of them and at no chosen moment:
//  - 'pass': every byte both ways;
//  - 'starting': each startup answered FATAL 57P03 "the database system is starting up" and
//    closed, as a server that is starting (or recovering) answers;
//  - 'silent': connections accepted and never answered (a hung host, a dropped route);
//  - 'reset-first-statement': the startup passes, then the connection is reset (TCP RST) as the
//    client sends its first statement, as a server that crashes or restarts right after it let
//    the client in. The first statement is the driver's own type fetch when `fetch_types` is on;
//  - 'hold-first-statement': the startup passes, and the first statement and all after it are
//    never delivered (a server that hangs once it let the client in).
// cut() ends every connection open now (a network cut); close() stops the proxy.
import { createConnection, createServer, type Server, type Socket } from 'node:net'

export type ProxyMode = 'pass' | 'starting' | 'silent' | 'reset-first-statement' | 'hold-first-statement'

export interface PgProxy {
  /** postgres://postgres@127.0.0.1:<port>/<database> through the proxy. */
  url(database?: string): string
  readonly port: number
  /** What new connections meet from now on (open ones keep theirs, except cut()). */
  mode: ProxyMode
  /** Connections accepted so far, first statements reset or held, and the text of each connection's first statement. */
  readonly stats: { connections: number; resets: number; held: number; statements: string[] }
  /** Ends every connection open now, both sides. */
  cut(): void
  close(): Promise<void>
}

/** FATAL 57P03, word for word what a starting server sends before it closes the connection. */
function startingUp(): Buffer {
  const fields = Buffer.from('SFATAL\0VFATAL\0C57P03\0Mthe database system is starting up\0\0', 'latin1')
  const head = Buffer.alloc(5)
  head.write('E', 0, 'latin1')
  head.writeUInt32BE(fields.length + 4, 1)
  return Buffer.concat([head, fields])
}

/**
 * Reads the client's side of the protocol as messages: the startup message (a length, no type
 * byte; an SSLRequest before it is answered 'N' by the server and passes), then typed messages.
 * Calls `onStatement` with its text at the first Query ('Q') or Parse ('P'), and stops reading.
 */
function statementWatch(onStatement: (text: string) => void): (chunk: Buffer) => void {
  let buffered = Buffer.alloc(0)
  let started = false
  let done = false
  return (chunk) => {
    if (done) return
    buffered = Buffer.concat([buffered, chunk])
    for (;;) {
      if (!started) {
        if (buffered.length < 8) return
        const length = buffered.readUInt32BE(0)
        if (buffered.length < length) return
        const code = buffered.readUInt32BE(4)
        buffered = buffered.subarray(length)
        if (code !== 80877103 && code !== 80877104) started = true // not an SSL/GSS request
        continue
      }
      if (buffered.length < 5) return
      const type = String.fromCharCode(buffered[0]!)
      const length = buffered.readUInt32BE(1)
      if (buffered.length < length + 1) return
      if (type === 'Q' || type === 'P') {
        done = true
        // Q: the query; P: a statement name, then the query (each NUL-terminated).
        const fields = buffered
          .subarray(5, length + 1)
          .toString('utf8')
          .split('\0')
        return onStatement((type === 'Q' ? fields[0] : fields[1]) ?? '')
      }
      buffered = buffered.subarray(length + 1)
    }
  }
}

export async function startPgProxy(targetPort: number, mode: ProxyMode = 'pass'): Promise<PgProxy> {
  const sockets = new Set<Socket>()
  const stats = { connections: 0, resets: 0, held: 0, statements: [] as string[] }
  const track = (s: Socket) => {
    sockets.add(s)
    s.on('error', () => {}).on('close', () => sockets.delete(s))
  }
  const server: Server = createServer((client) => {
    stats.connections++
    track(client)
    const now = proxy.mode
    if (now === 'silent') return
    if (now === 'starting') {
      client.once('data', () => client.end(startingUp()))
      return
    }
    const upstream = createConnection(targetPort, '127.0.0.1')
    track(upstream)
    const drop = () => {
      client.destroy()
      upstream.destroy()
    }
    client.on('close', drop)
    upstream.on('close', drop)
    upstream.pipe(client)
    // The startup goes up; the first statement is noted, then goes up too ('pass'), or both
    // sides are reset, or nothing more goes up.
    let holding = false
    const watch = statementWatch((text) => {
      stats.statements.push(text.trim())
      if (now === 'hold-first-statement') {
        stats.held++
        holding = true
      } else if (now === 'reset-first-statement') {
        stats.resets++
        client.resetAndDestroy()
        upstream.destroy()
      }
    })
    client.on('data', (chunk: Buffer) => {
      watch(chunk)
      if (!client.destroyed && !holding) upstream.write(chunk)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  const proxy: PgProxy = {
    url: (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`,
    port,
    mode,
    stats,
    cut() {
      for (const s of sockets) s.destroy()
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
  return proxy
}
