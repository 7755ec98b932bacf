/**
 * The figures of funnels.figures.ts's FigureAccumulator (nearest-rank median and p90 found by
 * selection, histogram by a pass) against the same figures of the durations sorted, on random
 * sets from empty to 200,000 durations, with many ties, negatives and bucket bounds.
 */
import { describe, expect, it } from 'vitest';
import { FigureAccumulator, HISTOGRAM_BOUNDS } from '../src/modules/journeys/funnels.figures.ts';
import { Rng } from './helpers/analytics-oracle.ts';

function sortedFigures(durations: number[], entered: number) {
  const sorted = [...durations].sort((x, y) => x - y);
  const rank = (p: number) => (sorted.length === 0 ? null : sorted[Math.max(1, Math.ceil(p * sorted.length)) - 1]);
  const histogram = HISTOGRAM_BOUNDS.map((from, i) => {
    const to = i + 1 < HISTOGRAM_BOUNDS.length ? HISTOGRAM_BOUNDS[i + 1] : null;
    const count = sorted.filter((d) => (i === 0 || d >= from) && (to === null || d < to)).length;
    return { from, to, count };
  });
  return { median: rank(0.5), p90: rank(0.9), histogram, completed: sorted.length, entered };
}

describe('funnel figures', () => {
  it('take the nearest ranks and the histogram as the sorted durations give them', () => {
    const rng = new Rng(7);
    for (const size of [0, 1, 2, 3, 5, 10, 11, 100, 1000, 20_000, 200_000]) {
      for (let round = 0; round < (size > 10_000 ? 2 : 20); round++) {
        // Few distinct values in some rounds (ties everywhere), spread ones in others.
        const spread = rng.pick([3, 50, 86_400 * 30]);
        const durations = Array.from({ length: size }, () =>
          rng.chance(0.1)
            ? rng.pick(HISTOGRAM_BOUNDS)
            : rng.int(spread) - (rng.chance(0.02) ? 5 : 0) + rng.pick([0, 0.5]),
        );
        const acc = new FigureAccumulator(1, true);
        for (const d of durations) acc.add(1, 0, [d * 1000]);
        const extra = rng.int(5);
        for (let i = 0; i < extra; i++) acc.add(0, 0, []);
        const [got] = acc.figures();
        const want = sortedFigures(durations, size + extra);
        expect(
          {
            median: got.medianTimeToComplete,
            p90: got.p90TimeToComplete,
            histogram: got.timeToCompleteHistogram,
            completed: got.completedCount,
            entered: got.enteredCount,
          },
          `size ${size} round ${round}`,
        ).toEqual(want);
      }
    }
  });
});
