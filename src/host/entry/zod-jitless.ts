// Imported first by the default browser worker: classic zod's object schemas probe
// `new Function("")` when they are built, and compile parsers with it when they first parse.
// Under a strict Content-Security-Policy (no 'unsafe-eval', which worker scripts served with
// the page's headers get) the probe throws, is caught, and is still reported as a violation.
// jitless parses with zod's interpreter only. The worker's own schemas are zod/mini's, whose
// objects are interpreted anyway (the bundle names no Function: test/security checks it); this
// keeps it so should any schema it runs ever reach zod's compiler. zod/mini and classic zod
// share this one core config. Browser only: in Node there is no CSP, and compiling is faster.
import { config } from 'zod/mini'

config({ jitless: true })
