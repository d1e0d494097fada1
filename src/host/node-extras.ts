// What Node's engines have that a browser's do not: Durable Streams (the engine serves them to
// createStreamsHandler). Given by Node's entries only, so a browser's worker never carries them.
import { lazyStreams } from '../engine/streams-lazy'
import type { EngineSettings } from './open-engine'

export const NODE_ENGINE_EXTRAS: Pick<EngineSettings, 'streams'> = { streams: lazyStreams }
