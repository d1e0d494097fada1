// Import first, before sessionfold. Under a CSP without 'unsafe-eval', zod (sessionfold checks
// the worker's frames with it in the page) probes for eval with `new Function('')` when it
// builds object schemas; the probe fails quietly, but Chrome still reports a
// `securitypolicyviolation` for it. `jitless` skips the probe (object parsing stays correct).
import { z } from 'zod'

z.config({ jitless: true })
