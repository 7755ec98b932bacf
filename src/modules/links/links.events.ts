/** What the links module publishes, and the short address its events carry. */
import type { Queryable } from '../../db/index.ts';
import type { NewEvent } from '../webhooks/index.ts';

/** Where events go: the webhooks module's outbox. */
export interface EventPublisher {
  publish(q: Queryable, collectionId: string, events: NewEvent[]): Promise<unknown>;
}

/** The short address of a code, on the service's public address (BASE_PATH included). */
export const shortUrl = (publicBaseUrl: string, code: string): string =>
  `${publicBaseUrl}/l/${encodeURIComponent(code)}`;
