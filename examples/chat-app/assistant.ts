// A pretend model. A real agent would append each delta as its model streams it: appending is
// what makes the reply durable (a reload mid-reply keeps what was said) and visible to every
// tab that follows the log, with no channel of its own between tabs. The events are the app's
// own (chat-events.ts): their data is checked by tsc here, and by the worker when appended.
import type { Session } from 'sessionfold'
import type {} from './chat-events' // its EventMap entries, and none of its code

const TOKEN_MS = 30
/** How long each subagent stays open for writing ('running' in the tree): `?pause=` in the page's URL, else 400 ms. */
const PAUSE_MS = Number(new URLSearchParams(globalThis.location?.search ?? '').get('pause')) || 400
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Appends `text` as a reply, one word at a time, then closes the reply. */
export async function streamReply(session: Session, text: string): Promise<void> {
  for (const token of text.match(/\S+\s*/g) ?? []) {
    await session.append({ type: 'assistant/delta', data: { text: token } })
    await sleep(TOKEN_MS)
  }
  await session.append({ type: 'assistant/done' }) // its data is null: it may be left out
}

export function replyTo(prompt: string): string {
  const quoted = prompt.length > 60 ? `${prompt.slice(0, 60)}…` : prompt
  return `You said: "${quoted}". I am a pretend assistant, but each word of this reply is an event appended to the chat's log, so any tab reading the chat sees it grow.`
}

/**
 * The assistant hands a task to a subagent, which hands part of it to one of its own: a child
 * session, then a grandchild, each writing a few events and closing when done. While a child
 * is open for writing its row in the tree says 'running'; the pauses let you see it.
 */
export async function delegate(session: Session, task: string): Promise<void> {
  await streamReply(session, `I will ask a researcher subagent to look into "${task}".`)
  // The chat's tags say it has subagents: the sidebar shows tags.
  const tags = session.projections.get('sessionMeta')?.tags ?? []
  if (!tags.includes('subagents')) await session.setMeta({ tags: [...tags, 'subagents'] })

  const researcher = await session.spawn({ mode: 'one-shot', label: 'researcher', title: `Research: ${task}` })
  try {
    await researcher.append({ type: 'turn/start', data: { task } })
    await sleep(PAUSE_MS)
    const checker = await researcher.spawn({ mode: 'one-shot', label: 'fact-checker', title: `Check: ${task}` })
    try {
      await checker.append({ type: 'turn/start', data: { task: 'check the sources' } })
      await sleep(PAUSE_MS)
      await checker.append({ type: 'turn/end', data: { verdict: 'sources agree' } })
    } finally {
      await checker.close() // its tree row turns 'inactive'
    }
    await researcher.append({ type: 'turn/end', data: { finding: 'three sources, checked' } })
  } finally {
    await researcher.close()
  }
  await streamReply(session, 'The researcher found three sources, and its fact-checker agrees with them. Both subagents are done.')
}
