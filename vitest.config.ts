import { defineConfig } from 'vitest/config';
import LongestFirst from './test/helpers/sequencer.ts';

/**
 * Two projects, split by file name, so that `npm test` (`vitest run`) runs both and
 * `npm run test:fast` (`vitest run --project fast`) is the inner loop (`npm run test:process`
 * runs the rest):
 *
 * - `fast`: every suite that runs the app in this process (`createTestApp`, PGlite by default);
 * - `process`: the suites named for what they need beyond that:
 *   - `*.process.test.ts` spawn real child processes (the service, job workers), stop or
 *     kill -9 them, and wait for restarts and lock timeouts (durability, crash, outage and
 *     multi-worker contention suites);
 *   - `*.pg.test.ts` need PostgreSQL as a whole (on PGlite every test in them is skipped).
 *
 * A new suite lands in `fast` unless its name says otherwise: name it `.process.test.ts` when
 * it starts processes, `.pg.test.ts` when nothing in it runs without TEST_DATABASE_URL.
 */
const SLOW = ['test/**/*.process.test.ts', 'test/**/*.pg.test.ts'];

export default defineConfig({
  test: {
    globalSetup: ['test/helpers/global-setup.ts'],
    pool: 'forks',
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: more parallel files only queue up behind each other's databases.
    maxWorkers: 2,
    // The longest files first (test/helpers/sequencer.ts): the run does not end on one of them.
    sequence: { sequencer: LongestFirst },
    // Transformed TypeScript kept on disk (node_modules/.experimental-vitest-cache, keyed by
    // content) so a run after the first skips most of the transform: about 2 s here.
    experimental: { fsModuleCache: true },
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts', 'src/**/*.test.ts'],
          exclude: SLOW,
          // One process per worker for all its files: the imports, PGlite's WebAssembly and
          // the compiled schemas are loaded once a worker instead of once a file, and
          // test/helpers/db.ts hands a file's emptied schema to the next file. Each file still
          // gets its own database; a file must leave no global state behind (env, timers,
          // listeners).
          isolate: false,
        },
      },
      // Each file in a fresh process, as before the split: these suites own child processes.
      { extends: true, test: { name: 'process', include: SLOW } },
    ],
  },
});
