// Contract: §6 client API — the client suite in Chromium on real IndexedDB, in every worker mode (docs/CONTRACT.md)
// The client suite in Chromium on real IndexedDB: the engine in a module Web Worker, in a
// SharedWorker, and in the page itself.
import { clientConformance } from '../contract/client'

let n = 0
const db = () => `client-${Date.now()}-${n++}`
clientConformance('Chromium, module Web Worker', () => ({ name: db(), worker: true }))
clientConformance('Chromium, SharedWorker', () => ({ name: db(), worker: 'shared' }))
clientConformance('Chromium, in the page', () => ({ name: db(), worker: false }))
clientConformance('Chromium, module Web Worker, encrypted', () => ({ name: db(), worker: true, encryption: { key: new Uint8Array(32).fill(4) } }))
