// Source tree only: the default Node worker (src/host/entry/node.ts), run through tsx. The built
// package has the compiled entry under this name, beside its client (dist/node/).
import { tsImport } from 'tsx/esm/api'

await tsImport('../host/entry/node.ts', import.meta.url)
