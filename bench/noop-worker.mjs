// A trivial comlink worker for bench/client.ts: the floor of a comlink round trip over
// worker_threads, against which a no-op call to the sessionfold worker is compared.
import { expose } from 'comlink'
import nodeEndpoint from 'comlink/dist/esm/node-adapter.mjs'
import { parentPort } from 'node:worker_threads'

expose({ noop: () => 1 }, nodeEndpoint(parentPort))
