// A small SVG line chart for BENCHMARKS.md: cost against size on log-log axes, each series with
// its min–max range as a bar at every point, and beside each series the dashed line a linear
// cost would follow from that series' first point (slope 1 on log-log axes). Hand-written so
// the suite needs no chart dependency; the output is deterministic for the same input.

export interface ChartPoint {
  x: number
  /** The median. */
  y: number
  min?: number
  max?: number
}

export interface ChartSeries {
  label: string
  points: ChartPoint[]
}

export interface Chart {
  title: string
  xLabel: string
  yLabel: string
  series: ChartSeries[]
  /** Draw the O(n) guide of each series (default true). */
  linearGuides?: boolean
}

const COLORS = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b']
const W = 720
const H = 430
const M = { left: 78, right: 24, top: 44, bottom: 118 }

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')
const r2 = (v: number) => Math.round(v * 100) / 100

/** "1k", "10k", "1M", "0.1", "20" … for tick labels. */
export function tickLabel(v: number): string {
  const units: [number, string][] = [
    [1e9, 'G'],
    [1e6, 'M'],
    [1e3, 'k'],
  ]
  for (const [u, s] of units) if (v >= u) return `${+(v / u).toPrecision(3)}${s}`
  return `${+v.toPrecision(3)}`
}

export function renderChart(chart: Chart): string {
  const pts = chart.series.flatMap((s) => s.points)
  const xs = pts.map((p) => p.x).filter((v) => v > 0)
  const ys = pts.flatMap((p) => [p.y, p.min ?? p.y, p.max ?? p.y]).filter((v) => v > 0 && Number.isFinite(v))
  if (xs.length === 0 || ys.length === 0) throw new Error(`chart ${chart.title}: no positive values`)
  const xLo = Math.floor(Math.log10(Math.min(...xs)))
  const xHi = Math.ceil(Math.log10(Math.max(...xs)))
  const yLo = Math.floor(Math.log10(Math.min(...ys)))
  const yHi = Math.max(yLo + 1, Math.ceil(Math.log10(Math.max(...ys))))
  const pw = W - M.left - M.right
  const ph = H - M.top - M.bottom
  const px = (x: number) => M.left + ((Math.log10(x) - xLo) / Math.max(1, xHi - xLo)) * pw
  const py = (y: number) => M.top + ph - ((Math.log10(y) - yLo) / (yHi - yLo)) * ph
  const out: string[] = []
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="12">`,
  )
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`)
  out.push(`<text x="${W / 2}" y="24" text-anchor="middle" font-size="15" font-weight="bold">${esc(chart.title)}</text>`)
  // grid and ticks: decades, with 2 and 5 as minor lines
  for (let d = xLo; d <= xHi; d++) {
    const x = px(10 ** d)
    out.push(`<line x1="${r2(x)}" y1="${M.top}" x2="${r2(x)}" y2="${M.top + ph}" stroke="#cccccc"/>`)
    out.push(`<text x="${r2(x)}" y="${M.top + ph + 16}" text-anchor="middle">${tickLabel(10 ** d)}</text>`)
  }
  for (let d = yLo; d <= yHi; d++) {
    const y = py(10 ** d)
    out.push(`<line x1="${M.left}" y1="${r2(y)}" x2="${M.left + pw}" y2="${r2(y)}" stroke="#cccccc"/>`)
    out.push(`<text x="${M.left - 6}" y="${r2(y + 4)}" text-anchor="end">${tickLabel(10 ** d)}</text>`)
    if (d < yHi) {
      for (const m of [2, 5]) {
        const ym = py(m * 10 ** d)
        out.push(`<line x1="${M.left}" y1="${r2(ym)}" x2="${M.left + pw}" y2="${r2(ym)}" stroke="#eeeeee"/>`)
      }
    }
  }
  out.push(`<rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}" fill="none" stroke="#333333"/>`)
  out.push(`<text x="${M.left + pw / 2}" y="${M.top + ph + 36}" text-anchor="middle">${esc(chart.xLabel)} (log scale)</text>`)
  out.push(`<text transform="translate(18 ${M.top + ph / 2}) rotate(-90)" text-anchor="middle">${esc(chart.yLabel)} (log scale)</text>`)
  // clip the guides to the plot
  out.push(`<defs><clipPath id="plot"><rect x="${M.left}" y="${M.top}" width="${pw}" height="${ph}"/></clipPath></defs>`)
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!
    const p = s.points.filter((q) => q.x > 0 && q.y > 0).sort((a, b) => a.x - b.x)
    if (p.length === 0) return
    if (chart.linearGuides !== false && p.length > 1) {
      const first = p[0]!
      const last = p.at(-1)!
      const yEnd = first.y * (last.x / first.x)
      out.push(
        `<line clip-path="url(#plot)" x1="${r2(px(first.x))}" y1="${r2(py(first.y))}" x2="${r2(px(last.x))}" y2="${r2(py(yEnd))}" ` +
          `stroke="${color}" stroke-opacity="0.45" stroke-dasharray="5 4"/>`,
      )
    }
    for (const q of p) {
      if (q.min !== undefined && q.max !== undefined && q.min > 0 && q.max > 0) {
        const x = r2(px(q.x))
        out.push(`<line x1="${x}" y1="${r2(py(q.min))}" x2="${x}" y2="${r2(py(q.max))}" stroke="${color}" stroke-width="1.5"/>`)
        out.push(`<line x1="${x - 4}" y1="${r2(py(q.min))}" x2="${x + 4}" y2="${r2(py(q.min))}" stroke="${color}"/>`)
        out.push(`<line x1="${x - 4}" y1="${r2(py(q.max))}" x2="${x + 4}" y2="${r2(py(q.max))}" stroke="${color}"/>`)
      }
    }
    out.push(`<polyline fill="none" stroke="${color}" stroke-width="2" points="${p.map((q) => `${r2(px(q.x))},${r2(py(q.y))}`).join(' ')}"/>`)
    for (const q of p) out.push(`<circle cx="${r2(px(q.x))}" cy="${r2(py(q.y))}" r="3.5" fill="${color}"/>`)
  })
  // legend below the axis label
  const legendTop = M.top + ph + 52
  chart.series.forEach((s, i) => {
    const color = COLORS[i % COLORS.length]!
    const col = i % 2
    const row = Math.floor(i / 2)
    const x = M.left + col * (pw / 2)
    const y = legendTop + row * 18
    out.push(`<line x1="${x}" y1="${y}" x2="${x + 22}" y2="${y}" stroke="${color}" stroke-width="2"/>`)
    out.push(`<circle cx="${x + 11}" cy="${y}" r="3.5" fill="${color}"/>`)
    out.push(`<text x="${x + 28}" y="${y + 4}">${esc(s.label)}</text>`)
  })
  if (chart.linearGuides !== false) {
    const rows = Math.ceil(chart.series.length / 2)
    out.push(
      `<text x="${M.left}" y="${legendTop + rows * 18 + 4}" fill="#555555">dashed: linear cost (O(n)) from each series' first point; bars: min–max of the runs</text>`,
    )
  }
  out.push('</svg>')
  return `${out.join('\n')}\n`
}
