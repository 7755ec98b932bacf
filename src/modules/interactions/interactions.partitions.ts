/**
 * interaction_events by month (migration 0911): the upkeep that makes the months ahead and,
 * with EVENTS_RETENTION_DAYS set, drops the months wholly older (src/db/partitions.ts says how;
 * docs/operations.md "Tables that age out" what it means for the answers).
 *
 * What retention leaves as it was, by design: everything the triggers maintain from the events
 * (the hourly counts by outcome, each identity's latest event and its counts, journeys'
 * progress) and the interaction totals stay as counted, since a dropped month is no DELETE on
 * interaction_events. So counts-by-outcome and funnels without a period keep counting the
 * dropped months; queries that read the events themselves (lists, exports, aggregates over
 * metadata, funnels with a period) find nothing there. A recipient whose events change later is
 * recomputed from the events kept (journeys' progress refresh).
 */
import { type Db, maintainMonthly, type UpkeepReport } from '../../db/index.ts';
import type { Housekeeping } from '../../platform/module.ts';
import type { InteractionsSettings } from './interactions.settings.ts';

export const EVENTS_TABLE = { table: 'interaction_events', column: 'occurred_at' } as const;

export class EventPartitions {
  constructor(
    private readonly db: Db,
    private readonly settings: Pick<InteractionsSettings, 'eventsRetentionDays'>,
  ) {}

  /** One run of the upkeep (see src/db/partitions.ts maintainMonthly). */
  maintain(now = new Date()): Promise<UpkeepReport> {
    return maintainMonthly(this.db, { ...EVENTS_TABLE, retentionDays: this.settings.eventsRetentionDays, now });
  }

  /**
   * Hourly in one worker of the deployment (a system schedule): a month is made three months
   * before it begins, so a run that cannot get the table's lock (it gives up after 1 s behind a
   * long query) has many more chances; and retention drops a month within the hour it ages out.
   */
  housekeeping(): Housekeeping {
    return {
      name: 'interactions.maintainPartitions',
      cron: '23 * * * *',
      description:
        'Makes the monthly partitions of interaction_events for this month and the next 3; with EVENTS_RETENTION_DAYS, drops the months wholly older',
      run: () => this.maintain(),
    };
  }
}
