// `sessionfold verify`: every log and checkpoint read and checked, with progress; exit 1 on
// damage. Read-only.
import type { VerifyReport } from '../core/protocol'
import type { Engine } from '../engine'
import { progressBar, type Io, type Output } from './output'

export async function verify(engine: Engine, out: Output, io: Io): Promise<number> {
  const plan = await engine.verifyPlan()
  const report: VerifyReport = { sessions: 0, events: 0, damaged: [] }
  const bar = out.json ? undefined : progressBar(io)
  const progress = (done: number) => {
    const total = Math.max(plan.events, done)
    if (bar) bar.show(done, total)
    else if (!out.json) io.stderr.write(`verified ${done}/${total} events\n`)
  }
  progress(0)
  for (let after: string | undefined; ; ) {
    const step = await engine.verifyStep(after, 20_000)
    report.sessions += step.sessions
    report.events += step.events
    report.damaged.push(...step.damaged)
    progress(report.events)
    if (step.next === null) break
    after = step.next
  }
  bar?.end()
  if (out.json) {
    await out.value(report)
  } else if (report.damaged.length === 0) {
    await out.line(`ok: ${report.sessions} sessions, ${report.events} events, no damage`)
  } else {
    const ids = new Set(report.damaged.map((d) => d.id))
    await out.line(
      [
        `DAMAGED: ${ids.size} of ${report.sessions} sessions (${report.events} events read)`,
        ...report.damaged.map((d) => `  ${d.id}  ${d.code}  ${d.detail}`),
      ].join('\n'),
    )
  }
  return report.damaged.length > 0 ? 1 : 0
}
