// Support: rendering with react-dom into happy-dom for the tests of sessionfold/react, counting
// renders and a view's live subscriptions, and catching React's warnings (console.error).
import { StrictMode, act, createElement, type FunctionComponent, type ReactElement } from 'react'
import { createRoot } from 'react-dom/client'
import { vi } from 'vitest'
import type { ProjectionMapView } from 'sessionfold'

// Tells React that updates are awaited through act() (else it warns on each one).
;(globalThis as { IS_REACT_ACT_ENVIRONMENT?: boolean }).IS_REACT_ACT_ENVIRONMENT = true

/** Past the projection view's batching and a listing's round trip, inside act(). */
export async function settle(work?: () => Promise<unknown>, ms = 25): Promise<void> {
  await act(async () => {
    await work?.()
    await new Promise((r) => setTimeout(r, ms))
  })
}

/** Like settle, but waits (inside act) until `check()` holds, for a value that crosses a worker. */
export async function until(check: () => boolean, work?: () => Promise<unknown>): Promise<void> {
  await act(async () => {
    await work?.()
    for (const start = Date.now(); !check() && Date.now() - start < 10_000; ) await new Promise((r) => setTimeout(r, 5))
  })
}

export interface Mounted {
  readonly container: HTMLElement
  text(): string
  rerender(element: ReactElement): Promise<void>
  unmount(): Promise<void>
}

/** Renders `element` into a fresh container (inside StrictMode with `strict`). */
export async function mount(element: ReactElement, { strict = false } = {}): Promise<Mounted> {
  const container = document.createElement('div')
  document.body.append(container)
  const root = createRoot(container)
  const wrap = (e: ReactElement) => (strict ? createElement(StrictMode, null, e) : e)
  await act(async () => root.render(wrap(element)))
  return {
    container,
    text: () => container.textContent ?? '',
    rerender: (e) => act(async () => root.render(wrap(e))),
    unmount: async () => {
      await act(async () => root.unmount())
      container.remove()
    },
  }
}

/** A component that calls `use(props)` and shows `show(result)`, counting its renders. */
export function probe<P extends object, T>(use: (props: P) => T, show: (value: T) => string) {
  const seen = { renders: 0, values: [] as T[] }
  // biome-ignore lint/correctness/noComponentHookFactories: a test probe, made once per test, wrapping the hook under test
  const Probe: FunctionComponent<P> = (props) => {
    seen.renders++
    const value = use(props)
    seen.values.push(value)
    return createElement('span', null, show(value))
  }
  return { Probe, seen }
}

/**
 * Counts `projections.subscribe` calls still subscribed (and all ever made), by wrapping the
 * real method of this one view: the subscription itself is the view's own.
 */
export function countSubscriptions(projections: ProjectionMapView): { live: number; made: number } {
  const counts = { live: 0, made: 0 }
  const subscribe = projections.subscribe.bind(projections) as (...args: unknown[]) => () => void
  vi.spyOn(projections, 'subscribe').mockImplementation(((...args: unknown[]) => {
    const stop = subscribe(...args)
    counts.live++
    counts.made++
    let stopped = false
    return () => {
      if (!stopped) counts.live--
      stopped = true
      stop()
    }
  }) as typeof projections.subscribe)
  return counts
}

/** console.error calls (React reports its warnings there: act, unstable getSnapshot, leaks). */
export function catchReactWarnings(): { calls: () => unknown[][] } {
  const spy = vi.spyOn(console, 'error').mockImplementation(() => {})
  return { calls: () => spy.mock.calls }
}
