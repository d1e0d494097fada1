// Reliability: the chat app (examples/chat-app) in real Chromium — two tabs of one origin on one IndexedDB store, as a user drives them (§14 session list, live tails, the tree)
// Vite serves the page from this source tree, Playwright drives Debian's Chromium (a persistent
// profile: IndexedDB on disk, each tab's engine in its own Web Worker). Tab A starts a chat,
// sends a message and waits for the streamed reply, then has the assistant spawn a subagent
// that spawns one of its own; tab B, on the same store, sees the chat in its sidebar, reads it
// along read-only (A holds the writer), and sees the tree, a rename and the delete, all live.
// Screenshots of both tabs go to test-output/.
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { chromium, type BrowserContext, type Page } from 'playwright'
import type { ViteDevServer } from 'vite'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../support/chromium'
import { serveExample } from '../support/vite'

const OUT = join(__dirname, '../../test-output')

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
})
