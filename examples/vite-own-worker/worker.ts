// examples/vite-own-worker/worker.ts
import { zodConfig } from './jitless' // first: ES modules run in order
import { serveEngine } from 'sessionfold/worker'
import { llmUsage, tokenCount } from '../custom-projection/token-count'

if (!zodConfig.jitless) throw new Error('zod must parse jitless here (see jitless.ts)')
await serveEngine({ projections: [tokenCount], events: [llmUsage] })
