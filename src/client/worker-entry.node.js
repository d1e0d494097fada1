// Source tree only: the default Node worker (worker/entry/node.ts), run through tsx. The built
// package has the compiled entry under this name, beside its client (dist/node/).
import { tsImport } from 'tsx/esm/api'

await tsImport('../../worker/entry/node.ts', import.meta.url)
