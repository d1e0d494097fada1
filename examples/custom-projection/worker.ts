// examples/custom-projection/worker.ts
import { serveEngine } from 'sessionfold/worker'
import { llmUsage, tokenCount } from './token-count'

await serveEngine({ projections: [tokenCount], events: [llmUsage] })
