// Source tree only: the default browser worker (src/host/entry/browser.ts), served by Vite (dev
// server, vitest's browser mode). The built package has the self-contained worker under this
// name, beside its client (dist/browser/).
import '../host/entry/browser.ts'
