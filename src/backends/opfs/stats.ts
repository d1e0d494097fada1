// What stat says of the origin's files: their size and time, and stand-ins for inode numbers
// (OPFS has none), the same while a path names the same file in this worker, new after a
// remove or a move over it. The file adapter compares them to tell a log appended to from one
// replaced (src/backends/fs/log-cache.ts).

export function createStats(partsOf: (path: string) => string[]) {
  const inodes = new Map<string, number>()
  let nextInode = 1
  let dirStamp = 0n

  const inodeOf = (path: string): number => {
    const key = partsOf(path).join('/')
    let n = inodes.get(key)
    if (n === undefined) inodes.set(key, (n = nextInode++))
    return n
  }
  const forgetInodes = (path: string) => {
    const at = partsOf(path).join('/')
    for (const p of inodes.keys()) if (p === at || p.startsWith(`${at}/`)) inodes.delete(p)
  }

  function fileStats(path: string, size: number, mtimeMs: number) {
    return {
      size,
      mtimeMs,
      mtimeNs: BigInt(Math.round(mtimeMs)) * 1_000_000n,
      ino: inodeOf(path),
      isFile: () => true,
      isDirectory: () => false,
    }
  }
  function dirStats() {
    // Folders have no times here: a stamp new at every look, so that no listing is kept on its strength.
    return { size: 0, mtimeMs: Date.now(), mtimeNs: ++dirStamp, ino: 0, isFile: () => false, isDirectory: () => true }
  }

  return { fileStats, dirStats, forgetInodes }
}
