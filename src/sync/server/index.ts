/**
 * The server side of HTTP sync: {@link createSyncHandler}, a Fetch-API handler for any Node or
 * edge server, and {@link toNodeListener} for `node:http`. Clients connect with `store.connect(url)`.
 *
 * @module sessionfold/server
 */
export { createSyncHandler, type Authorize, type AuthorizeRequest, type SyncHandler, type SyncHandlerOptions } from './handler'
export { toNodeListener } from './node'
export { createStreamsHandler, type StreamsHandler, type StreamsHandlerOptions } from '../../streams/server/handler'
export { SYNC_PATHS, SYNC_PROTOCOL, type PullAnswer, type PushAnswer, type SyncErrorBody } from '../protocol'
