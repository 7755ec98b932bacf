/**
 * link_clicks by month (migration 0912): the upkeep that makes the months ahead and, with
 * CLICKS_RETENTION_DAYS set, drops the months wholly older (src/db/partitions.ts says how;
 * docs/operations.md "Tables that age out" what it means for the answers).
 *
 * What retention leaves as it was, by design: the link's click counter (and so its click
 * milestones) and the collection's hourly and daily rollup (link_click_rollup, and the referer
 * URLs' months beside it, link_click_value_months), kept by the
 * click batch, not derived from the clicks later. So collection-wide analytics keep counting
 * the dropped months; what reads the clicks themselves (a link's click list, its analytics, the
 * CSV export, conversions by click id, journeys' link steps) finds nothing there.
 */
import { type Db, maintainMonthly, type UpkeepReport } from '../../db/index.ts';
import type { Housekeeping } from '../../platform/module.ts';
import type { LinksSettings } from './links.settings.ts';

export const CLICKS_TABLE = { table: 'link_clicks', column: 'clicked_at' } as const;

export class ClickPartitions {
  constructor(
    private readonly db: Db,
    private readonly settings: Pick<LinksSettings, 'clicksRetentionDays'>,
  ) {}

  /** One run of the upkeep (see src/db/partitions.ts maintainMonthly). */
  maintain(now = new Date()): Promise<UpkeepReport> {
    return maintainMonthly(this.db, { ...CLICKS_TABLE, retentionDays: this.settings.clicksRetentionDays, now });
  }

  /** Hourly in one worker of the deployment (a system schedule), as the events' (interactions.partitions.ts). */
  housekeeping(): Housekeeping {
    return {
      name: 'links.maintainPartitions',
      cron: '27 * * * *',
      description:
        'Makes the monthly partitions of link_clicks for this month and the next 3; with CLICKS_RETENTION_DAYS, drops the months wholly older',
      run: () => this.maintain(),
    };
  }
}
