// zod parses without compiling code (no `new Function`), as a Content-Security-Policy without
// 'unsafe-eval' requires of a worker's script: worker.ts imports this first, before any module
// that builds a schema. Its config is exported and read there: a package.json that says
// "sideEffects": false (this repository's does) lets a bundler drop a bare `import './jitless'`.
import { z } from 'zod'

export const zodConfig = z.config({ jitless: true })
