// The physical limit of bench/opfs.ts (not a target): a dedicated worker writing the same bytes
// as the appends (each event's JSON and a newline) into one file of the origin's private file
// system through a sync access handle, write + flush() per batch (or per event), timed here in
// the worker (no hop from the page, no framing, no codec, no index). The page (page.ts) sends
// one message per run and gets the ms back.

/** A sync access handle (TypeScript's DOM library has none: it is a worker's). */
interface SyncHandle {
  write(from: ArrayBufferView, options?: { at?: number }): number
  getSize(): number
  flush(): void
  close(): void
}
type SyncFile = FileSystemFileHandle & { createSyncAccessHandle(): Promise<SyncHandle> }

export interface RawRequest {
  id: number
  /** The folder of the origin's private file system this run writes in (the page removes it). */
  folder: string
  /** Written to a file of their own before the timed writes (untimed): the worker's code warmed up. */
  prime: Uint8Array[]
  /** The timed writes: each is written, then flushed. */
  chunks: Uint8Array[]
}

export type RawReply = { id: number; ok: true; ms: number; bytes: number } | { id: number; ok: false; error: string }

async function writeAll(dir: FileSystemDirectoryHandle, file: string, chunks: readonly Uint8Array[]): Promise<{ ms: number; bytes: number }> {
  const handle = await ((await dir.getFileHandle(file, { create: true })) as SyncFile).createSyncAccessHandle()
  let at = 0
  let ms: number
  try {
    const t0 = performance.now()
    for (const chunk of chunks) {
      let done = 0
      while (done < chunk.length) done += handle.write(chunk.subarray(done), { at: at + done })
      at += chunk.length
      handle.flush()
    }
    ms = performance.now() - t0
    const size = handle.getSize()
    if (size !== at) throw new Error(`raw file ${file} holds ${size} bytes, expected ${at}`)
  } finally {
    handle.close()
  }
  return { ms, bytes: at }
}

self.onmessage = async (event: MessageEvent<RawRequest>) => {
  const { id, folder, prime, chunks } = event.data
  try {
    const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle(folder, { create: true })
    if (prime.length > 0) await writeAll(dir, 'prime', prime)
    const { ms, bytes } = await writeAll(dir, 'log', chunks)
    self.postMessage({ id, ok: true, ms, bytes } satisfies RawReply)
  } catch (err) {
    self.postMessage({ id, ok: false, error: String(err) } satisfies RawReply)
  }
}
