// TypeDoc: the API reference in docs/reference/, generated from the JSDoc of the package's public
// entry points (`npm run docs`). test/package/docs.test.ts checks that every export is documented
// and that the committed pages are what these sources generate.

/**
 * The package's public entry points, each named in its file by a `@module` tag after the import
 * that reaches it (package.json "exports"). The browser entries (src/index-browser.ts,
 * src/host/entry/serve-browser.ts) export the same names as the Node ones listed here. A new
 * entry point (such as `sessionfold/react`) is one more line here, with its `@module` tag, and
 * its folder in tsconfig.docs.json's "include" if it is not under src/.
 */
export const entryPoints = [
  'src/index-node.ts', // sessionfold
  'src/host/entry/serve-node.ts', // sessionfold/worker
  'src/backends/memory/index.ts', // sessionfold/adapters/memory
  'src/backends/indexeddb/index.ts', // sessionfold/adapters/indexeddb
  'src/backends/fs/index.ts', // sessionfold/adapters/fs
  'src/backends/postgres/index.ts', // sessionfold/adapters/postgres
  'src/react/index.ts', // sessionfold/react
  'src/sync/server/index.ts', // sessionfold/server
  'src/testing/index.ts', // sessionfold/testing
]

/** @type {Partial<import('typedoc').TypeDocOptions & import('typedoc-plugin-markdown').PluginOptions>} */
export default {
  entryPoints,
  tsconfig: 'tsconfig.docs.json',
  name: 'sessionfold API reference',
  // Markdown, not HTML: it reads on GitHub, in an editor and in node_modules/sessionfold/docs,
  // and its diffs show what changed in the API. One page per import path.
  plugin: ['typedoc-plugin-markdown'],
  out: 'docs/reference',
  readme: 'none',
  outputFileStrategy: 'modules',
  indexFormat: 'table',
  hidePageHeader: true,
  parametersFormat: 'table',
  interfacePropertiesFormat: 'table',
  classPropertiesFormat: 'table',
  typeDeclarationFormat: 'table',
  excludeInternal: true,
  excludePrivate: true,
  // No links to source lines: they would name a commit, and the pages would change with every one.
  disableSources: true,
  // tsc --noEmit checks the types (npm test runs it); TypeDoc's own check of the whole program
  // would double its time. (It also fixes the order TypeDoc prints union members in: the
  // order the converter meets them, the same in npm run docs and in the test.)
  skipErrorChecking: true,
  validation: { notExported: true, notDocumented: true, invalidLink: true },
  // An undocumented export fails the run, and nothing is written: the reference is whole or not made.
  treatValidationWarningsAsErrors: true,
}
