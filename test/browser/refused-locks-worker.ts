// Fixture: a browser engine worker whose Web Locks refuse the host's alive lock (refused-locks.browser.test.ts).
import './vitest-worker'
import { serveEngine } from '../../src/host/entry/serve-browser'
import { refuseLocks } from './refused-locks'

refuseLocks(['alive'])
void serveEngine()
