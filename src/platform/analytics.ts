/**
 * Which data answered an analytics request, sent back as the `X-Analytics-Source` header:
 * `maintained` (counters and tables kept up to date as events are written: counters cost the
 * same however many events match; progress rows cost what the entrants they answer for cost,
 * not their events) or `events` (the matching events were read). Both answers are the same;
 * the header tells a client which requests stay fast as its data grows.
 */
export type AnalyticsSource = 'maintained' | 'events';

export interface Analysed<T> {
  answer: T;
  source: AnalyticsSource;
}

export const ANALYTICS_SOURCE_HEADER = 'x-analytics-source';
