// Imported by every engine worker that vitest's browser mode serves from source. That mode
// rewrites each dynamic import in the files it serves to go through its page's runner
// (`__vitest_browser_runner__.wrapDynamicImport`), which a worker started by `new URL(…)` does
// not have; vitest gives the workers Vite bundles (`?worker_file`) this same stand-in. The
// engine imports a backend's code when a store opens (src/backends/<name>/registration.ts).
const runner = globalThis as { __vitest_browser_runner__?: { wrapDynamicImport(load: () => unknown): unknown } }
runner.__vitest_browser_runner__ ??= { wrapDynamicImport: (load) => load() }
