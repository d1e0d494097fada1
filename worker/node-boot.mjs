// Runs a TypeScript worker entry from source (development and tests): the built package
// points workers at compiled JavaScript instead and never loads this file.
import { workerData } from 'node:worker_threads'
import { tsImport } from 'tsx/esm/api'

await tsImport(workerData.entry, import.meta.url)
