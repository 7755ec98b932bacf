/**
 * The dimensions of click analytics: the `groupBy` names, their numbers in the collection-wide
 * rollup (migration 0620, `link_click_rollup.dim`) and a click's value in each. One list, read
 * by the click batch that keeps the rollup and by the reads.
 */
import type { NewClick } from './links.repository.ts';

/** In the order of their `dim` (1…15); 0 is every click, with the value ''. */
export const GROUP_BY = [
  'country',
  'region',
  'city',
  'device',
  'browser',
  'os',
  'referer',
  'referer_url',
  'utm_source',
  'utm_medium',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'trigger',
  'link',
] as const;
export type GroupBy = (typeof GROUP_BY)[number];

/**
 * A link's own breakdowns, read from its clicks, add `route` (the way of the link each click was
 * sent: destination, a rule or an A/B variant); `link` is the collection's only. `route` has no
 * dim: its values (`variant:0`) name a way of one link, and summed over links they mean nothing.
 */
export const LINK_GROUP_BY = [...GROUP_BY.filter((g) => g !== 'link'), 'route'] as const;
export type LinkGroupBy = (typeof LINK_GROUP_BY)[number];
export type AnyGroupBy = GroupBy | LinkGroupBy;

/** A groupBy's `dim` in the rollup. A Map: names from requests never index a plain object. */
export const DIM: ReadonlyMap<GroupBy, number> = new Map(GROUP_BY.map((g, i) => [g, i + 1]));

/**
 * The dims whose values are also counted per UTC month (migration 0650), so that their top values
 * are found without grouping every value of a window (analytics.repository.ts, `rankedTop`):
 * the referer URL alone, the one dim whose values are per page. The migration's partial index
 * names the same dim.
 */
export const RANKED_DIMS: ReadonlySet<number> = new Set([DIM.get('referer_url') as number]);

/** Values are cut at this many characters, in the rollup and in every answer (an index entry's bound). */
export const VALUE_MAX = 500;

/**
 * A referer's host name: after the scheme and any user info, up to the port, path, query or
 * fragment, lower-cased; what is not such an address is kept (its first 100 characters). The
 * same pattern as the click statistics' (links.repository.ts), so both answer the same hosts.
 */
export const REFERER_HOST = '^[A-Za-z][A-Za-z0-9+.-]*://(?:[^/?#@]*@)?([^/?#:]+)';
const refererHostPattern = new RegExp(REFERER_HOST);

export function refererHost(referer: string): string {
  if (referer === '') return '';
  const m = refererHostPattern.exec(referer);
  return m ? m[1].toLowerCase() : referer.slice(0, 100);
}

/** A click's value in every dim, 0…15. */
export function dimensionValues(c: NewClick): string[] {
  return [
    '',
    c.country,
    c.region,
    c.city,
    c.deviceType,
    c.browser,
    c.os,
    refererHost(c.referer),
    c.referer,
    c.utmSource,
    c.utmMedium,
    c.utmCampaign,
    c.utmTerm,
    c.utmContent,
    c.trigger,
    c.linkId,
  ].map((v) => (v.length > VALUE_MAX ? v.slice(0, VALUE_MAX) : v));
}

/** A click is a bot's when its user agent's device type is (user-agent.ts). */
export const isBot = (deviceType: string): boolean => deviceType === 'bot';
