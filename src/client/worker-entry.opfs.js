// Source tree only: the browser worker of a store whose storage is 'opfs'
// (src/host/entry/browser-opfs.ts), served by Vite (dev server, vitest's browser mode). The
// built package has the self-contained worker under this name, beside its client (dist/browser/).
import '../host/entry/browser-opfs.ts'

// vitest's browser mode rewrites each dynamic import in the files it serves to go through its
// page's runner, which this worker lacks (see worker-entry.browser.js).
globalThis.__vitest_browser_runner__ ??= { wrapDynamicImport: (load) => load() }
