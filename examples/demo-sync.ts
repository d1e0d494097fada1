// `npm run demo:sync`: the sync demo. Starts a sync server (an fs store in .sessionfold-server/,
// examples/sync-server.ts) and the demo pages (Vite), and prints two device URLs: each device
// has its own IndexedDB database, so open both as tabs and watch sessions made on one appear on
// the other; the page's buttons take the server away and bring it back.
import { fileURLToPath } from 'node:url'
import { createServer } from 'vite'
import { startDemoSyncServer } from './sync-server'

const server = await startDemoSyncServer({
  dir: '.sessionfold-server',
  port: Number(process.env.SYNC_PORT ?? 8787),
  controlPort: Number(process.env.CONTROL_PORT ?? 8788),
})
const vite = await createServer({ configFile: fileURLToPath(new URL('./demo-page/vite.config.ts', import.meta.url)), server: { host: '127.0.0.1' } })
await vite.listen()
const base = vite.resolvedUrls?.local[0] ?? 'http://127.0.0.1:5173/'
const page = (device: string) => `${base}sync.html?device=${device}&server=${encodeURIComponent(server.url)}&control=${encodeURIComponent(server.control)}`
console.log(`sync server: ${server.url} (store: .sessionfold-server/)`)
console.log(`device A: ${page('a')}`)
console.log(`device B: ${page('b')}`)
console.log('(each device has its own IndexedDB database, so both can be tabs of one browser; Ctrl-C stops)')
const stop = async () => {
  await vite.close()
  await server.close()
  process.exit(0)
}
process.on('SIGINT', () => void stop())
process.on('SIGTERM', () => void stop())
