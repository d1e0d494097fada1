// Where the command line writes: people's text or JSON on stdout, with backpressure.

/** Where the command line writes, and how it is interrupted (tests and the real process alike). */
export interface Io {
  stdout: NodeJS.WritableStream & { isTTY?: boolean }
  stderr: NodeJS.WritableStream & { isTTY?: boolean; columns?: number }
  stdin: NodeJS.ReadableStream & { isTTY?: boolean }
  /** Resolves on SIGINT (events --follow stops there). */
  interrupted: Promise<void>
}

/** Human text or JSON, on stdout; waits for the stream to drain so huge outputs stay bounded. */
export class Output {
  constructor(
    private readonly io: Io,
    readonly json: boolean,
  ) {}

  async line(text: string): Promise<void> {
    await write(this.io.stdout, `${text}\n`)
  }

  async value(v: unknown): Promise<void> {
    await this.line(JSON.stringify(v, null, 2))
  }

  /** Something left out that the command could go on without: a line on stderr (JSON with --json). */
  warn(code: string, message: string): void {
    report(this.io, this.json, 'warning', code, message)
  }
}

/**
 * An error or warning on stderr: `sessionfold: message (CODE)` for people, or with --json one
 * line holding one JSON object, `{"error":{"code","message"}}` (or "warning"), for scripts.
 */
export function report(io: Io, json: boolean, kind: 'error' | 'warning', code: string, message: string): void {
  if (json) io.stderr.write(`${JSON.stringify({ [kind]: { code, message } })}\n`)
  else io.stderr.write(`sessionfold: ${kind === 'warning' ? 'warning: ' : ''}${message}${code === 'ERROR' || code === 'USAGE' ? '' : ` (${code})`}\n`)
}

export function write(stream: NodeJS.WritableStream, text: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: unknown) => reject(err)
    stream.once('error', onError)
    const flushed = stream.write(text, (err) => {
      stream.off('error', onError)
      if (err) reject(err)
      else if (flushed) resolve()
    })
    if (!flushed) stream.once('drain', () => resolve())
  })
}

/** `[####------] 40% 400/1000 events` redrawn in place on a terminal's stderr; nothing elsewhere. */
export function progressBar(io: Io): { show(done: number, total: number): void; end(): void } | undefined {
  if (io.stderr.isTTY !== true) return undefined
  let drawn = false
  return {
    show(done, total) {
      const ratio = total === 0 ? 1 : Math.min(1, done / total)
      const width = Math.max(10, Math.min(40, (io.stderr.columns ?? 80) - 40))
      const filled = Math.round(ratio * width)
      io.stderr.write(`\r[${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${Math.floor(ratio * 100)}% ${done}/${total} events`)
      drawn = true
    },
    end() {
      if (drawn) io.stderr.write('\n')
    },
  }
}
