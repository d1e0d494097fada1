// Debian's chromium (no browser download is possible on these machines), headless, with the
// flags this machine's closed network needs. Every test, the browser test project and the
// browser benchmarks launch it with these.

/** Where Chromium is: CHROMIUM_PATH, or Debian's package. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium'

/** The flags every launch uses. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
]
