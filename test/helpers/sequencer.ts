/**
 * The order test files start in: the longest first, whichever project they are in, so that
 * the run does not end with one long file on one worker while the other has nothing left (two
 * workers on two cores: a 3-minute file started last adds 3 minutes to the run). Vitest's own
 * order runs one project's files after the other's, so the PostgreSQL run of 2026-11-27 ended
 * with `schedules.process.test.ts` (158 s, three minutes of a real schedule) alone.
 *
 * Vitest orders by duration only from its results cache (node_modules/.vite), which a
 * fresh clone (CI) has not got: it then keeps the files as found. So a file's last duration in
 * this checkout's cache or the hint below, the larger, orders it (0 for a new file: it starts
 * after the known long ones, and lands in the cache once run).
 *
 * The hints are seconds measured on one machine (both backends, the larger taken; CI of
 * 2026-11-28, with the shorter runs of funnels-property and schedules.process made that day
 * estimated); only their order matters, and a stale one costs time, never a result.
 */
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const HINTS: Record<string, number> = {
  'test/schedules.process.test.ts': 130,
  'test/console.process.test.ts': 55,
  'test/funnels-property.test.ts': 60,
  'test/cli.process.test.ts': 35,
  'test/app-tasks.process.test.ts': 35,
  'test/jobs-fairness.test.ts': 32,
  'test/durability.process.test.ts': 30,
  'test/faults/db-outage.process.test.ts': 27,
  'test/app-tasks.test.ts': 23,
  'test/analytics-exact.test.ts': 23,
  'test/multiprocess.process.test.ts': 17,
  'test/console-funnels.process.test.ts': 17,
  'test/app-objects-events.test.ts': 16,
  'test/traces.process.test.ts': 15,
  'test/analytics-maintained.test.ts': 15,
  'test/jobs-fairness-backlog.pg.test.ts': 14,
  'test/client/install.process.test.ts': 14,
  'test/jobs-queues.test.ts': 13,
  'test/jobs-engine.test.ts': 11,
  'test/jobs-crash.process.test.ts': 11,
  'test/faults/jobs-contention.process.test.ts': 11,
  'test/webhooks-fairness.test.ts': 10,
  'test/webhooks-crash.process.test.ts': 10,
  'test/readme.process.test.ts': 10,
  'test/webhooks.test.ts': 9,
  'test/webhooks-ssrf.test.ts': 9,
  'test/partitions.test.ts': 8,
  'test/metrics.test.ts': 8,
  'test/analytics-bounds.pg.test.ts': 8,
};

export default class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const root = this.ctx.config.root;
    const seconds = (spec: TestSpecification) => {
      const file = relative(root, spec.moduleId).replaceAll('\\', '/');
      const cached = this.ctx.cache.getFileTestResults(`${spec.project.name}:${file}`);
      // The larger: CI's PostgreSQL run finds the PGlite run's figures in the cache, where the
      // PostgreSQL-only files took no time at all.
      return Math.max(cached ? cached.duration / 1000 : 0, HINTS[file] ?? 0);
    };
    return [...files].sort(
      (a, b) => a.project.config.sequence.groupOrder - b.project.config.sequence.groupOrder || seconds(b) - seconds(a),
    );
  }
}
