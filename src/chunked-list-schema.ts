// The strict schema of a ChunkedList's JSON form, for units' stateSchema (engine side: zod).
import { z, type ZodType } from 'zod'
import { CHUNK_SIZE, ChunkedList } from './chunked-list'

/**
 * Validates the JSON form strictly: no empty chunk, none over 64, every chunk below the head
 * full (appends never leave one otherwise), every item valid; parses to a ChunkedList.
 */
export function chunkedListSchema<T>(item: ZodType<T>) {
  return z
    .array(z.array(item).min(1).max(CHUNK_SIZE))
    .superRefine((chunks, ctx) => {
      chunks.forEach((c, i) => {
        if (i > 0 && c.length !== CHUNK_SIZE) ctx.addIssue({ code: 'custom', message: `chunk ${i} below the head holds ${c.length}, not ${CHUNK_SIZE}` })
      })
    })
    .transform((chunks) => ChunkedList.fromChunks(chunks))
}
