/**
 * Our worker process for bench/jobs.bench.ts: support/job-worker-main.ts (the JobEngine the
 * crash tests run) with the bench's query counter installed first.
 */
import { installQueryCounter } from './query-count.ts';

installQueryCounter();
await import('../support/job-worker-main.ts');
