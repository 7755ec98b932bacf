/**
 * The jobs' metrics (docs/operations.md, "Metrics and traces"): what this process's engines
 * ran (counted as each attempt's outcome is recorded, through the engine's observer), and the
 * backlog of the whole deployment, read from the database at each scrape.
 *
 * Labels stay bounded: `task` is a task this service registers; an app's own tasks (named by
 * tenants, leased over HTTP by the app's workers, never run by these engines) are one
 * `(app)` series, in the backlog and in what this process's API leased and heard back
 * (leases.service.ts; no run time: a heartbeat restamps the lease, and the worker reports
 * only the end). `queue` is the engine lane (`default`, `deliveries`, `app`), not a named
 * queue's name, which tenants choose.
 */
import type { Metrics } from '../../platform/metrics.ts';
import type { TaskBacklog } from '../../platform/tasks.ts';
import type { JobObserver } from './engine/core.ts';
import { APP_LANE } from './jobs.settings.ts';

/** From a 1 ms job to a long export. */
const RUN_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];
/** From a job picked up at once to one waiting through a long backlog. */
const WAIT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];
/** The one `task` label of every app task. */
export const APP_TASK_LABEL = '(app)';

export function jobsMetrics(metrics: Metrics, backlog: () => Promise<readonly TaskBacklog[]>): JobObserver {
  const completed = metrics.counter({
    name: 'jobs_completed_total',
    help: "Attempts this process's workers ran, by task, lane and outcome (succeeded, retried, failed)",
    labelNames: ['task', 'queue', 'result'],
  });
  const failed = metrics.counter({
    name: 'jobs_failed_total',
    help: 'Jobs whose last attempt failed in this process (no attempt left), by task and lane; a job whose last claim or lease expired counts where it was reclaimed',
    labelNames: ['task', 'queue'],
  });
  const reclaimed = metrics.counter({
    name: 'jobs_reclaimed_total',
    help: "Running jobs whose worker stopped responding (claim or lease expired), handed back by this process's lock-timeout reclaim, by task, lane and result (retried, failed)",
    labelNames: ['task', 'queue', 'result'],
  });
  const ran = metrics.histogram({
    name: 'jobs_run_duration_seconds',
    help: "A job handler's run time in this process, by task",
    labelNames: ['task'],
    buckets: RUN_BUCKETS,
  });
  const pickup = metrics.histogram({
    name: 'jobs_pickup_latency_seconds',
    help: 'From a job falling due (run_at) to its handler starting in this process, by task and lane',
    labelNames: ['task', 'queue'],
    buckets: WAIT_BUCKETS,
  });
  // An app's tasks are its own names, unbounded: one series for all of them.
  const taskLabel = (task: string, lane: string) => (lane === APP_LANE ? APP_TASK_LABEL : task);
  const label = (b: TaskBacklog) => taskLabel(b.task, b.lane);
  metrics.gauge({
    name: 'jobs_queue_depth',
    help: 'Due jobs waiting for a worker, the whole deployment, by task and lane (read at scrape, at most 100,000 counted)',
    labelNames: ['task', 'queue'],
    async collect(g) {
      for (const b of await backlog()) g.inc({ task: label(b), queue: b.lane }, b.due);
    },
  });
  metrics.gauge({
    name: 'jobs_queue_oldest_due_seconds',
    help: 'How long the longest-waiting due job has waited, by task and lane (read at scrape)',
    labelNames: ['task', 'queue'],
    async collect(g) {
      const now = Date.now();
      const oldest = new Map<string, { task: string; queue: string; at: number }>();
      for (const b of await backlog()) {
        const key = `${b.lane}/${label(b)}`;
        const at = b.oldestDueAt.getTime();
        if ((oldest.get(key)?.at ?? Number.POSITIVE_INFINITY) > at)
          oldest.set(key, { task: label(b), queue: b.lane, at });
      }
      for (const o of oldest.values()) g.set({ task: o.task, queue: o.queue }, Math.max(0, now - o.at) / 1000);
    },
  });
  return {
    started: (task, lane, waitedSeconds) => pickup.observe({ task, queue: lane }, waitedSeconds),
    finished(task, lane, result, ranSeconds) {
      completed.inc({ task, queue: lane, result });
      if (ranSeconds !== undefined) ran.observe({ task }, ranSeconds);
      if (result === 'failed') failed.inc({ task, queue: lane });
    },
    reclaimed(task, lane, result) {
      const labels = { task: taskLabel(task, lane), queue: lane };
      reclaimed.inc({ ...labels, result });
      // Failed for good all the same: the alert on jobs_failed_total sees it.
      if (result === 'failed') failed.inc(labels);
    },
  };
}
