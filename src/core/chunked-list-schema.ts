// The strict schema of a ChunkedList's JSON form, for units' stateSchema (engine side: zod/mini).
import { z } from 'zod/mini'
import { CHUNK_SIZE, ChunkedList } from './chunked-list'

/**
 * Validates the JSON form strictly: no empty chunk, none over 64, every chunk below the head
 * full (appends never leave one otherwise), every item valid; parses to a ChunkedList.
 */
export function chunkedListSchema<T>(item: z.core.$ZodType<T>) {
  return z.pipe(
    z.array(z.array(item).check(z.minLength(1), z.maxLength(CHUNK_SIZE))).check(
      z.superRefine((chunks, ctx) => {
        chunks.forEach((c, i) => {
          if (i > 0 && c.length !== CHUNK_SIZE) ctx.addIssue({ code: 'custom', message: `chunk ${i} below the head holds ${c.length}, not ${CHUNK_SIZE}` })
        })
      }),
    ),
    z.transform((chunks: T[][]) => ChunkedList.fromChunks(chunks)),
  )
}
