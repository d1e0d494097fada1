// Imported first by the default browser worker: zod's object schemas probe `new Function("")`
// when they are built, and compile parsers with it when they first parse. Under a strict
// Content-Security-Policy (no 'unsafe-eval', which worker scripts served with the page's
// headers get) the probe throws, is caught, and is still reported as a violation. jitless
// parses with zod's interpreter only: no Function is ever constructed in the worker.
// Browser only: in Node there is no CSP, and the compiled parsers are faster. zod/mini, as our
// schemas use, and classic zod, as an app's may, share this one core config.
import { config } from 'zod/mini'

config({ jitless: true })
