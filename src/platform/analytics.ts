/**
 * Which data answered an analytics request, sent back as the `X-Analytics-Source` header:
 * `maintained` (counters and tables kept up to date as events are written: a cost independent
 * of how many events match, or for a journey funnel with a period, of that period's entrants)
 * or `events` (the matching events were read). Both answers are the same; the header tells a
 * client which requests stay fast as its data grows.
 */
export type AnalyticsSource = 'maintained' | 'events';

export interface Analysed<T> {
  answer: T;
  source: AnalyticsSource;
}

export const ANALYTICS_SOURCE_HEADER = 'x-analytics-source';
