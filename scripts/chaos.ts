// Chaos run of HTTP sync (npm run chaos): three devices (two fs stores, one IndexedDB store on
// fake-indexeddb) and a sync server in a process of its own, with a fault-injecting proxy
// between them that drops, delays, duplicates, reorders and cuts requests and responses, while
// the server is killed and started again on a schedule and the devices write to their own and
// to shared sessions, go offline and reconnect. Then the faults stop, everything settles, and
// every side is checked: equal logs (a conflict resolved by a fork of the second writer's
// events, DESIGN §15), no log of two histories, every acknowledged event in exactly one session
// (the one it was written to, or the fork that took it), nothing twice, no deleted session left
// (test/support/chaos/).
//
//   npm run chaos -- [--seconds 60] [--seed S] [--server fs|postgres] [--restart-every MS] [--dump FILE] [--json]
//
// The same seed makes the same choices (workload, faults per device and request, restarts) as
// far as the timing allows. Exit status 0 when every check holds, 1 otherwise.
import { formatChaos, runChaos } from '../test/support/chaos/run'
import type { ServerKind } from '../test/support/chaos/server'

const args = process.argv.slice(2)
const flag = (name: string) => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 ? args[i + 1] : undefined
}
const seconds = Number(flag('seconds') ?? 60)
const seed = Number(flag('seed') ?? Math.floor(Math.random() * 2 ** 31))
const server = (flag('server') ?? 'fs') as ServerKind
const restartEvery = flag('restart-every')
if (!Number.isFinite(seconds) || seconds <= 0 || !Number.isInteger(seed) || !['fs', 'postgres'].includes(server)) {
  console.error('usage: npm run chaos -- [--seconds N] [--seed S] [--server fs|postgres] [--restart-every MS] [--dump FILE] [--json]')
  process.exit(2)
}
const json = args.includes('--json')
const dump = flag('dump')
const result = await runChaos({
  seed,
  seconds,
  server,
  ...(restartEvery ? { restartEveryMs: Number(restartEvery) } : {}),
  ...(dump ? { dump } : {}),
  settleMs: Math.max(90_000, seconds * 500),
  log: (line) => console.error(line),
})
console.log(json ? JSON.stringify(result) : formatChaos(result))
process.exit(result.problems.length === 0 ? 0 : 1)
