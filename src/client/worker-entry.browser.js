// Source tree only: the default browser worker (src/host/entry/browser.ts), served by Vite (dev
// server, vitest's browser mode). The built package has the self-contained worker under this
// name, beside its client (dist/browser/).
import '../host/entry/browser.ts'

// vitest's browser mode (this file's only runner besides Vite's dev server) rewrites each dynamic
// import in the files it serves to go through its page's runner, which this worker lacks: the
// stand-in vitest itself gives the workers Vite bundles. The engine imports a backend's code when
// a store opens (src/backends/<name>/registration.ts).
globalThis.__vitest_browser_runner__ ??= { wrapDynamicImport: (load) => load() }
