// Fixture: the engine's Web Worker, with the injected quota fault of quota-fault.ts (quota.browser.test.ts)
import './vitest-worker'
import { serveEngine } from '../../src/host/entry/serve-browser'
import { installQuotaFault } from './quota-fault'

installQuotaFault('worker')
void serveEngine()
