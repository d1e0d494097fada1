// `npm run test:unit`: the quick run, a part of the node project of vitest.config.ts. It keeps
// the suites of the engine, the client (memory, fake IndexedDB and fs stores), the codec, the
// storage contract and the React hooks, and leaves out what needs a browser, a PostgreSQL
// cluster, the built package, killed processes or minutes of soak (test/postgres, test/cli,
// test/reliability, test/server, test/security, test/package, test/browser and the files
// below); `npm test` runs everything.
import { availableParallelism } from 'node:os'
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config'
import config from './vitest.config.js'

/** The areas of test/ the quick run covers. */
export const UNIT_AREAS = ['adapters', 'engine', 'client', 'codec', 'contract', 'react']

/** Suites of those areas left out of it, each for a reason. */
export const LEFT_OUT = [
  'test/client/node-exit.test.ts', // Node processes that must exit on their own
  'test/client/model-fuzz.test.ts', // long random call sequences against a model, in a worker too
  'test/adapters/fs-recovery.test.ts', // writer processes killed with SIGKILL, full disks
  'test/codec/codec.test.ts', // encryption end to end: HTTP sync servers, the CLI, rotations killed in other processes
]

const node = (config.test!.projects as TestProjectInlineConfiguration[]).find((p) => p.test?.name === 'node')!

export default defineConfig({
  ...config,
  test: {
    ...config.test,
    // Two files at once even on two cores (vitest's default there is one): these suites wait on
    // fsync, timers and worker threads more than they compute, so the run takes about half as long.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    projects: [
      {
        ...node,
        test: {
          ...node.test,
          name: 'unit',
          include: UNIT_AREAS.map((area) => `test/${area}/**/*.test.ts`),
          exclude: [...(node.test?.exclude ?? []), ...LEFT_OUT],
        },
      },
    ],
  },
})
