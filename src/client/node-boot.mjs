// Runs a TypeScript worker file through tsx (an app's workerUrl: './my-worker.ts', and this
// source tree's own entries): connect-node.ts starts it with the file's URL as workerData. The
// built package carries this file beside its client.
import { workerData } from 'node:worker_threads'
import { tsImport } from 'tsx/esm/api'

await tsImport(workerData.entry, import.meta.url)
