/**
 * Housekeeping: the lock-timeout reclaim on every poll (one engine of a process does it:
 * `housekeeping`, EngineOptions), and `sweep()`, the reclaim and retention together, run by the
 * `jobs.retention` system schedule (the jobs module's manifest, `housekeeping`) and by tests.
 *
 * Design
 * - Liveness: a job whose claim has expired (`lock_expires_at`: its worker stopped
 *   heart-beating, runner.ts) belonged to a dead worker: the reclaim makes it claimable again
 *   (the lost attempt counts), or failed if its attempts are spent. It is cheap (a partial
 *   index) and runs on every poll and every failed round's retry (wakeup.ts), in every worker.
 * - Retention (finished jobs deleted after `retentionMs`, 1000 at a time) is upkeep, not
 *   liveness: once a minute in one worker of the deployment, on the schedules module's
 *   system schedule (docs/schedules.md), no longer on each worker's poll. Idempotent: a run cut
 *   off leaves the rest to the next minute.
 * - Events: with a publisher, the reclaim is a transaction that publishes `job.failed` for the
 *   visible tasks' jobs whose last attempt it gives up on (completions.ts, "Events").
 * - Metrics: each job it hands back is told to the observer (`reclaimed`) after the commit:
 *   its worker, dead or an app's that let its lease run out, never reported an outcome.
 * - States: none; a failed reclaim throws, and the round it belongs to is tried again
 *   (wakeup.ts).
 */
import { failedEvent } from '../jobs.events.ts';
import * as repo from '../jobs.repository.ts';
import { publishOutcomes } from './completions.ts';
import type { EngineCore } from './core.ts';

export class Housekeeping {
  constructor(private readonly core: EngineCore) {}

  /** Runs the housekeeping now: lock-timeout reclaim and retention. Returns what it did. */
  async sweep(): Promise<{ reclaimed: number; deleted: number }> {
    const { core } = this;
    const reclaimed = await core.retrying(() => this.reclaimExpired());
    if (reclaimed > 0) core.log.warn({ reclaimed }, 'jobs: reclaimed jobs of unresponsive workers');
    let deleted = 0;
    for (;;) {
      const n = await core.retrying(() => repo.deleteFinished(core.db, core.settings.retentionMs));
      deleted += n;
      if (n < 1000) break;
    }
    return { reclaimed, deleted };
  }

  /** The lock-timeout reclaim of a round (throws when it fails). */
  async housekeep(): Promise<void> {
    const reclaimed = await this.core.retrying(() => this.reclaimExpired());
    if (reclaimed > 0) this.core.log.warn({ reclaimed }, 'jobs: reclaimed jobs of unresponsive workers');
  }

  /**
   * The lock-timeout reclaim; with a publisher, in a transaction that publishes `job.failed` for
   * the visible tasks' jobs whose last attempt it gives up on (once per poll: a BEGIN and COMMIT
   * more, whatever the jobs).
   */
  private async reclaimExpired(): Promise<number> {
    const rows = await this.reclaimAndPublish();
    // Counted once the reclaim has committed: a rolled-back round reclaims them again.
    for (const r of rows) this.core.observer?.reclaimed(r.task, r.lane, r.status === 'failed' ? 'failed' : 'retried');
    return rows.length;
  }

  private async reclaimAndPublish(): Promise<repo.ReclaimedJob[]> {
    const { core } = this;
    const publisher = core.publisher;
    if (!publisher) return repo.reclaimExpired(core.db, core.settings.lockTimeoutMs);
    return core.db.transaction(async (tx) => {
      const rows = await repo.reclaimExpired(tx, core.settings.lockTimeoutMs);
      // The job's own `visible`, not the registry: an app's task (leased over HTTP, app lane) is
      // visible and in no registry.
      const failed = rows.filter((r) => r.status === 'failed' && r.visible);
      await publishOutcomes(
        tx,
        publisher,
        failed.map((r) => failedEvent(r, r.last_error ?? '', r.finished_at ?? new Date())),
        failed.map((r) => r.collection_id),
      );
      return rows;
    });
  }
}
