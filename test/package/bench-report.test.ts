// BENCHMARKS.md is written again by each `npm run bench`; the notes written by hand beside a
// section's figures (a run of its own, what a figure means) must come through that.
import { describe, expect, it } from 'vitest'
import { HAND_NOTES, keepHandNotes } from '../../bench/report'

const fresh = ['# Benchmarks', '', '## A', '', '| a | 1.2 |', '', '- a note', '', '## B', '', '| b | 3 |', '', '## Charts', '', '![x](x.svg)', ''].join('\n')

describe('BENCHMARKS.md written again', () => {
  it('keeps the notes written by hand at the end of their sections, and drops those of a section gone', () => {
    const old = [
      '# Benchmarks',
      '',
      '## A',
      '',
      '| a | 1.0 |',
      '',
      `${HAND_NOTES} (written by hand):`,
      '- a run of its own: 1.5',
      '',
      '## Gone',
      '',
      `${HAND_NOTES}:`,
      '- nothing measures this any more',
      '',
      '## B',
      '',
      '| b | 2 |',
      '',
      `${HAND_NOTES}:`,
      '- b, by hand',
      '',
    ].join('\n')
    const written = keepHandNotes(old, fresh)
    expect(written).toBe(
      [
        '# Benchmarks',
        '',
        '## A',
        '',
        '| a | 1.2 |',
        '',
        '- a note',
        '',
        `${HAND_NOTES} (written by hand):`,
        '- a run of its own: 1.5',
        '',
        '## B',
        '',
        '| b | 3 |',
        '',
        `${HAND_NOTES}:`,
        '- b, by hand',
        '',
        '## Charts',
        '',
        '![x](x.svg)',
        '',
      ].join('\n'),
    )
    // Written again from the result: the notes once, not twice.
    expect(keepHandNotes(written, fresh)).toBe(written)
  })

  it('changes nothing where there are no notes by hand', () => {
    expect(keepHandNotes('', fresh)).toBe(fresh)
    expect(keepHandNotes(fresh, fresh)).toBe(fresh)
  })
})
