/**
 * The click batch's share of analytics: the collection-wide rollup (migration 0620), kept in
 * the batch's own transaction so that the counts and the clicks are stored together or not at
 * all. Two statements a batch whatever its size: the batch's visitors noted per day (those new
 * today make its uniques), and its counts per collection, hour, dimension, value and bot or not
 * added to the rollup (per hour, and per day for the breakdowns). A unique is the first click
 * stored of a visitor on a UTC day in the collection, counted in that click's hour and values:
 * so uniques add up over hours, values and links to the uniques of the whole day.
 *
 * The counting is the redirect's cost more than anything here: clicks alike in every value are
 * gathered first, and each group is spread over its 31 keys once (measured: the rollup's share
 * of the redirect process under load fell from 15 % to 2–4 %).
 */
import type { Queryable } from '../../db/index.ts';
import { DIM, dimensionValues, isBot, RANKED_DIMS } from './analytics.dimensions.ts';
import * as repo from './analytics.repository.ts';
import type { NewClick } from './links.repository.ts';
import { utcDay } from './visitors.ts';

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The UTC month of a time, as `YYYY-MM-01`. */
const monthOf = (ms: number) => `${new Date(ms).toISOString().slice(0, 7)}-01`;

/**
 * The `link` dimension's number: the last of a click's values (GROUP_BY's order), so the others
 * are those before it.
 */
const LINK_DIM = DIM.get('link') as number;

/** Counts of clicks and of their uniques. */
interface Tally {
  clicks: number;
  uniques: number;
}

/**
 * Clicks of a batch alike in collection, hour, bot or not, and every dimension's value but
 * their link's, with their counts per link.
 */
interface Group extends Tally {
  collectionId: string;
  hour: number;
  bot: boolean;
  /** The values of dims 0…LINK_DIM − 1. */
  values: string[];
  links: Map<string, Tally>;
}

export async function addToRollup(tx: Queryable, clicks: NewClick[]): Promise<void> {
  if (clicks.length === 0) return;
  // Earliest first, so that a visitor's first click of the batch is the one counted unique.
  const order = clicks
    .map((_, i) => i)
    .sort((x, y) => clicks[x].clickedAt.getTime() - clicks[y].clickedAt.getTime() || x - y);
  const keys = new Map<string, repo.VisitorDay>();
  const keyOf = new Array<string>(clicks.length);
  for (const i of order) {
    const c = clicks[i];
    if (c.visitor === '') continue;
    const day = utcDay(c.clickedAt);
    const key = `${c.collectionId}\u0000${day}\u0000${c.visitor}`;
    keyOf[i] = key;
    if (!keys.has(key)) keys.set(key, { collectionId: c.collectionId, day, visitor: c.visitor });
  }
  const fresh = await repo.newVisitorDays(
    tx,
    [...keys.keys()].sort().map((k) => keys.get(k) as repo.VisitorDay),
  );
  // Clicks alike in every value (same collection, hour, bot or not, and the same values) are
  // counted together first: a batch is mostly such runs (a link shared in one place, one
  // campaign, one kind of device), and expanding a group into its 31 rollup keys costs what a
  // click used to cost alone. The link is left out of the group's key and counted inside it:
  // clicks spread over many links are otherwise each a group of their own (a probe over 1,000
  // links: this function's CPU a click 4 times that over one link).
  const groups = new Map<string, Group>();
  for (const i of order) {
    const c = clicks[i];
    const unique = keyOf[i] !== undefined && fresh.delete(keyOf[i]) ? 1 : 0;
    const all = dimensionValues(c);
    const link = all[LINK_DIM];
    const values = all.slice(0, LINK_DIM);
    const hour = Math.floor(c.clickedAt.getTime() / HOUR_MS) * HOUR_MS;
    const bot = isBot(c.deviceType);
    const key = `${c.collectionId}\u0000${hour}\u0000${bot}\u0000${values.join('\u0000')}`;
    let group = groups.get(key);
    if (!group) {
      group = { collectionId: c.collectionId, hour, bot, values, clicks: 0, uniques: 0, links: new Map() };
      groups.set(key, group);
    }
    group.clicks++;
    group.uniques += unique;
    const tally = group.links.get(link);
    if (tally) {
      tally.clicks++;
      tally.uniques += unique;
    } else {
      group.links.set(link, { clicks: 1, uniques: unique });
    }
  }
  const counts = new Map<string, repo.RollupRow>();
  const add = (g: Group, t: Tally, dim: number, daily: boolean, at: number, value: string) => {
    const key = `${g.collectionId}\u0000${dim}\u0000${daily}\u0000${at}\u0000${value}\u0000${g.bot}`;
    const row = counts.get(key);
    if (row) {
      row.clicks += t.clicks;
      row.uniques += t.uniques;
    } else {
      const { collectionId, bot } = g;
      counts.set(key, {
        collectionId,
        dim,
        daily,
        hour: new Date(at),
        value,
        bot,
        clicks: t.clicks,
        uniques: t.uniques,
      });
    }
  };
  // A ranked dim's clicks per month (bots included): `collection \0 dim \0 month \0 value`.
  const months = new Map<string, repo.MonthRow>();
  for (const g of groups.values()) {
    const day = Math.floor(g.hour / DAY_MS) * DAY_MS;
    const month = monthOf(g.hour);
    for (const dim of RANKED_DIMS) {
      const value = g.values[dim];
      const key = `${g.collectionId}\u0000${dim}\u0000${month}\u0000${value}`;
      const row = months.get(key);
      if (row) row.clicks += g.clicks;
      else months.set(key, { collectionId: g.collectionId, dim, month, value, clicks: g.clicks });
    }
    // Every dim per hour; the breakdowns' dims per day too (dim 0, the series, only per hour).
    g.values.forEach((value, dim) => {
      add(g, g, dim, false, g.hour, value);
      if (dim > 0) add(g, g, dim, true, day, value);
    });
    for (const [link, t] of g.links) {
      add(g, t, LINK_DIM, false, g.hour, link);
      add(g, t, LINK_DIM, true, day, link);
    }
  }
  await repo.addToRollup(tx, [...counts.values()], [...months.values()]);
}
