// Source tree only: the default Node worker (worker/node-entry.ts), run through tsx. The built
// package has the compiled entry under this name, beside its client (dist/node/).
import { tsImport } from 'tsx/esm/api'

await tsImport('../../worker/node-entry.ts', import.meta.url)
