// A store in PostgreSQL: its row in Node's list of backends (src/backends/node.ts). The driver,
// an optional peer, is loaded with the backend's code, and only then.
import type { BackendEntry } from '../platform'
import { postgresConfig, type PostgresConfig, type PostgresOptions } from './config'
import { masked } from './errors'

export const postgresStorage: BackendEntry<PostgresConfig, PostgresOptions> = {
  storage: 'postgres',
  options: ['url', 'schema', 'lease', 'timeouts'],
  is: 'a PostgreSQL store is its `url` and `schema`',
  config: postgresConfig,
  redact: (config, text) => masked(text, config.url),
  load: () => import('./backend').then((m) => m.postgresBackend),
}
