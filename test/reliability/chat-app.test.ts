// Reliability: the chat app (examples/chat-app) in real Chromium — two tabs of one origin on one IndexedDB store, as a user drives them (§14 session list, live tails, the tree)
// Vite serves the page from this source tree, Playwright drives Debian's Chromium (a persistent
// profile: IndexedDB on disk, each tab's engine in its own Web Worker). Tab A starts a chat,
// sends a message and waits for the streamed reply, then has the assistant spawn a subagent
// that spawns one of its own; tab B, on the same store, sees the chat in its sidebar, reads it
// along read-only (A holds the writer), and sees the tree, a rename and the delete, all live.
// Then a chat written as the app's first version wrote it (user/message { text }, no event
// definitions) is read by the app's own worker at the latest version (chat-events.ts), and that
// worker refuses the old shape for a new append. Screenshots of both tabs go to test-output/.
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'
import { serveExample } from '../support/vite'

const OUT = join(__dirname, '../../test-output')
/** The package's browser entry, as Vite serves it from this source tree (the app's own alias target). */
const SESSIONFOLD = `/@fs${join(__dirname, '../../src/index-browser.ts')}`

let server: ViteDevServer | undefined
let context: BrowserContext | undefined
let profile: string | undefined
let base: string
const problems: string[] = []

beforeAll(async () => {
  ;({ server, base } = await serveExample('chat-app', 'chat-app-test'))
  profile = await mkdtemp(join(tmpdir(), 'sessionfold-chat-'))
  context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: CHROMIUM_ARGS,
    viewport: { width: 1100, height: 640 },
  })
  context.setDefaultTimeout(15_000)
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => console.error(`CSP: ${e.effectiveDirective} blocked ${e.blockedURI || '(inline)'}`))
  })
  await mkdir(OUT, { recursive: true })
}, 60_000)

afterAll(async () => {
  await context?.close()
  await server?.close()
  if (profile) await rm(profile, { recursive: true, force: true })
})

// Each step acts in the tab in front, as a user would: Chromium renders a tab behind another
// less often, and Playwright's clicks there wait seconds for the page to be stable.

/** A tab of the app; its errors (page errors, unhandled rejections, console errors, CSP) are collected. */
async function tab(name: string): Promise<Page> {
  const page = await context!.newPage()
  page.on('pageerror', (e) => problems.push(`${name} pageerror: ${e.message}`))
  page.on('console', (m) => m.type() === 'error' && problems.push(`${name} console: ${m.text()}`))
  // Subagents stay 'running' for 3 s (400 ms by default): under load a tab's tree may take longer than 400 ms to show them.
  await page.goto(`${base}/?pause=3000`)
  await page.locator('nav.sidebar').waitFor()
  return page
}

/** The sidebar row of chat `id`. */
const row = (page: Page, id: string) => page.locator(`li.chat-row[data-id="${id}"]`)
/** The subagent tree's rows as "depth label activity". */
const tree = (page: Page) =>
  page.$$eval('aside.tree li.tree-row', (lis) => lis.map((li) => `${(li as HTMLElement).dataset.depth} ${li.textContent?.replace(/(running|done)$/, ' $1')}`))

const REPLY_END = 'sees it grow.'

describe('the chat app in two tabs', () => {
  let a: Page
  let b: Page
  let id: string

  it('a chat started in tab A streams its reply, and shows in tab B, which reads along', async () => {
    ;[a, b] = await Promise.all([tab('A'), tab('B')])
    await a.bringToFront()

    await a.getByRole('button', { name: 'New chat' }).click()
    await a.locator('li.chat-row.current').waitFor()
    id = (await a.locator('li.chat-row.current').getAttribute('data-id'))!
    await a.locator('.chat-header h1', { hasText: 'New chat' }).waitFor()
    // A holds the writer: the composer is on.
    await a.locator('.composer button[type="submit"]:not([disabled])').waitFor()

    await a.getByLabel('Message').fill('Hello there')
    await a.getByRole('button', { name: 'Send' }).click()
    // The reply grows word by word (an open message), then closes.
    await a.locator('li.message.assistant.open').waitFor()
    await a.locator('li.message.assistant:not(.open)', { hasText: REPLY_END }).waitFor()
    expect(await a.locator('li.message').allTextContents()).toEqual(['Hello there', expect.stringMatching(/^You said: "Hello there"\. .* sees it grow\.$/)])
    // The first message named the chat.
    await a.locator('.chat-header h1', { hasText: 'Hello there' }).waitFor()

    // Tab B: the chat in its sidebar, with its title, marked running (A writes it).
    await row(b, id).locator('.chat-title', { hasText: 'Hello there' }).waitFor()
    await row(b, id).locator('.running').waitFor()
    await b.bringToFront()
    await row(b, id).locator('.chat-open').click()
    await b.locator('.read-only', { hasText: 'another tab is writing this chat' }).waitFor()
    await b.locator('li.message.assistant:not(.open)', { hasText: REPLY_END }).waitFor()
    expect(await b.locator('li.message').allTextContents()).toEqual(await a.locator('li.message').allTextContents())
    expect(await b.locator('.composer button[type="submit"]').isDisabled()).toBe(true)

    // A second message: B follows it live as A streams the reply.
    await a.bringToFront()
    await a.getByLabel('Message').fill('And again')
    await a.getByRole('button', { name: 'Send' }).click()
    await b.locator('li.message.assistant.open').waitFor()
    await b.locator('li.message.assistant:not(.open)', { hasText: '"And again"' }).waitFor()
  }, 45_000)

  it("the assistant's subagent and its grandchild show in both tabs' trees, running then done", async () => {
    await a.locator('.composer button[type="submit"]:not([disabled])').waitFor()
    await a.getByRole('button', { name: 'Ask a subagent' }).click()
    // Live: the child and the grandchild appear while they are open for writing.
    await a.locator('aside.tree li.tree-row', { hasText: 'fact-checker' }).locator('.activity.running').waitFor()
    await a.screenshot({ path: join(OUT, 'chat-app-a-running.png') })
    await b.locator('aside.tree li.tree-row', { hasText: 'fact-checker' }).waitFor()
    await a.locator('li.message.assistant:not(.open)', { hasText: 'Both subagents are done.' }).waitFor()
    for (const page of [a, b]) {
      await page.waitForFunction(() => document.querySelectorAll('aside.tree .activity.running').length === 0)
      expect(await tree(page)).toEqual(['0 researcher done', '1 fact-checker done'])
    }
    await b.locator('li.message.assistant:not(.open)', { hasText: 'Both subagents are done.' }).waitFor()
    // The tag the assistant set shows in B's sidebar.
    await row(b, id).locator('.tag', { hasText: 'subagents' }).waitFor()
    await a.screenshot({ path: join(OUT, 'chat-app-a.png') })
    await b.screenshot({ path: join(OUT, 'chat-app-b.png') })
  }, 40_000)

  it('a rename in tab A shows in tab B; a delete in A leaves both sidebars, and B lets the chat go', async () => {
    await a.getByRole('button', { name: 'Rename' }).click()
    await a.getByLabel('Chat title').fill('Trip planning')
    await a.getByRole('button', { name: 'Save' }).click()
    await row(b, id).locator('.chat-title', { hasText: 'Trip planning' }).waitFor()
    await b.locator('.chat-header h1', { hasText: 'Trip planning' }).waitFor()

    await row(a, id).getByRole('button', { name: 'Delete Trip planning' }).click()
    await row(a, id).waitFor({ state: 'detached' })
    await row(b, id).waitFor({ state: 'detached' })
    await b.locator('.notice', { hasText: 'That chat was deleted.' }).waitFor()
    expect(await b.locator('section.chat').count()).toBe(0)
    await b.screenshot({ path: join(OUT, 'chat-app-b-deleted.png') })
    // The delete, the subagents' included, went through: A shows no error.
    expect(await a.locator('.notice').count()).toBe(0)
    expect(problems).toEqual([])
  }, 20_000)

  it("a chat the app's first version wrote shows at the latest version, as it was typed; the app's worker refuses that shape now", async () => {
    await b.bringToFront()
    // In tab B's page (same origin, same IndexedDB): first the app as it was before it defined
    // its events, a store in the page's thread with no definitions; then the app's own worker
    // file, on the same database, as main.ts starts it.
    // A string, so that vitest's transform leaves its import() as the page's own.
    await b.evaluate(`import(${JSON.stringify(SESSIONFOLD)}).then((m) => { globalThis.sessionfold = m })`)
    const seen = await b.evaluate(async () => {
      const { openStore, isSessionfoldError } = (globalThis as unknown as { sessionfold: typeof import('sessionfold') }).sessionfold
      const first = await openStore({ worker: false })
      const old = await first.createSession({ title: 'From the first version' })
      await old.append([
        // No `format` then: the app showed the text as typed.
        { type: 'user/message', data: { text: 'Is 2 * 3 = 6? I put **stars** here' } } as never,
        { type: 'assistant/delta', data: { text: 'It is, ' } },
        { type: 'assistant/delta', data: { text: 'yes.' } },
        { type: 'assistant/done' },
      ])
      await old.close()
      await first.close()

      const store = await openStore({ worker: () => new Worker(new URL('/worker.ts', location.href), { type: 'module' }) })
      try {
        const s = await store.openSession(old.id)
        const refused: string[] = []
        for (const data of [{ text: 'the first shape' }, { text: 'x', format: 'html' }]) {
          await s.append({ type: 'user/message', data } as never).then(
            () => refused.push('accepted'),
            (err: unknown) => refused.push(isSessionfoldError(err) ? err.code : String(err)),
          )
        }
        const stored: [number, number | undefined, unknown][] = []
        for await (const e of s.events({ types: ['user/message'] })) stored.push([e.seq, e.v, e.data])
        const transcript = s.projections.get('chatTranscript')
        await s.close()
        return { id: old.id, refused, stored, transcript }
      } finally {
        await store.close()
      }
    })
    // Refused in the worker (INVALID_ARGUMENT), nothing written; the old event read upcast.
    expect(seen.refused).toEqual(['INVALID_ARGUMENT', 'INVALID_ARGUMENT'])
    expect(seen.stored).toEqual([[1, 2, { text: 'Is 2 * 3 = 6? I put **stars** here', format: 'plain' }]])
    expect(seen.transcript).toEqual([
      { key: 1, role: 'user', text: 'Is 2 * 3 = 6? I put **stars** here', format: 'plain', open: false },
      { key: 2, role: 'assistant', text: 'It is, yes.', format: 'plain', open: false },
    ])

    // Tab A opens it: the old message as it was typed, its stars not turned bold.
    await a.bringToFront()
    await row(a, seen.id).locator('.chat-open').click()
    await a.locator('.chat-header h1', { hasText: 'From the first version' }).waitFor()
    await a.locator('li.message.assistant:not(.open)', { hasText: 'It is, yes.' }).waitFor()
    const old = a.locator('li.message.user[data-format="plain"]')
    expect(await old.textContent()).toBe('Is 2 * 3 = 6? I put **stars** here')
    expect(await old.locator('strong').count()).toBe(0)

    // A new message is written at the latest version, as Markdown.
    await a.locator('.composer button[type="submit"]:not([disabled])').waitFor()
    await a.getByLabel('Message').fill('Now **bold** and `code`')
    await a.getByRole('button', { name: 'Send' }).click()
    const typed = a.locator('li.message.user[data-format="markdown"]')
    await typed.locator('strong', { hasText: 'bold' }).waitFor()
    expect(await typed.locator('code').textContent()).toBe('code')
    expect(await typed.textContent()).toBe('Now bold and code')
    await a.locator('li.message.assistant:not(.open)', { hasText: REPLY_END }).nth(0).waitFor()
    expect(await a.locator('li.message').count()).toBe(4)
    await a.screenshot({ path: join(OUT, 'chat-app-a-versions.png') })
    expect(problems).toEqual([])
  }, 30_000)
})
