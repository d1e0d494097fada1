// examples/custom-projection/worker.ts
import { serveEngine } from 'sessionfold/worker'
import { tokenCount } from './token-count'

await serveEngine({ projections: [tokenCount] })
