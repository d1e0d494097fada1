// Imported first by the default browser worker: zod's object schemas probe `new Function("")`
// when they are built, and compile parsers with it when they first parse. Under a strict
// Content-Security-Policy (no 'unsafe-eval', which worker scripts served with the page's
// headers get) the probe throws, is caught, and is still reported as a violation. jitless
// parses with zod's interpreter only: no Function is ever constructed in the worker.
// Browser only: in Node there is no CSP, and the compiled parsers are faster.
import { config } from 'zod'

config({ jitless: true })
