/**
 * The webhooks' metrics (docs/operations.md, "Metrics and traces"): attempts this process
 * sent, by outcome, deliveries that failed for good, and how late the deliveries are. The lag
 * is read at each scrape from the job queue's backlog (a due attempt is a due job of the
 * delivery task, delivery.ts): how long the most overdue attempt has waited for a worker, 0
 * when none waits. An attempt put off on purpose (a retry's backoff, a registration's rate)
 * is not late until its time comes.
 */
import type { Metrics } from '../../platform/metrics.ts';
import type { JobQueue } from '../../platform/tasks.ts';
import type { DeliveryObserver } from './delivery.ts';
import { DELIVER_TASK } from './outbox.ts';

const ATTEMPT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

export function webhooksMetrics(metrics: Metrics, queue: JobQueue): DeliveryObserver {
  const attempts = metrics.counter({
    name: 'webhook_deliveries_total',
    help: 'Delivery attempts this process sent, by outcome (succeeded, failed, refused by the address guard)',
    labelNames: ['result'],
  });
  const failed = metrics.counter({
    name: 'webhook_deliveries_failed_total',
    help: 'Deliveries that failed for good in this process: their last automatic attempt failed',
  });
  const duration = metrics.histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time from sending a delivery attempt to its answer (or failure)',
    buckets: ATTEMPT_BUCKETS,
  });
  metrics.gauge({
    name: 'webhook_delivery_lag_seconds',
    help: 'How long the most overdue delivery attempt has waited for a worker (read at scrape; 0 when none is due)',
    async collect(g) {
      const due = (await queue.backlog()).filter((b) => b.task === DELIVER_TASK);
      const oldest = Math.min(Date.now(), ...due.map((b) => b.oldestDueAt.getTime()));
      g.set(Math.max(0, Date.now() - oldest) / 1000);
    },
  });
  return {
    attempted(outcome, seconds) {
      attempts.inc({ result: outcome });
      duration.observe(seconds);
    },
    deliveryFailed: () => failed.inc(),
  };
}
