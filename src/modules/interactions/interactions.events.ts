/**
 * What the interactions module publishes (its part of the event catalogue, docs/webhooks.md):
 * one `interaction.recorded` per event stored, and `interaction.milestone` when an interaction's
 * count of recorded events reaches a threshold. Both are about one interaction of one app (and
 * the recorded one about a journey when the event names one), so a registration's `filters`
 * narrow them by `interactionIds`, `appIds` and `journeyIds`.
 */
import { Type } from 'typebox';
import { defineEvent, type NewEvent } from '../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';
import type { EventRow } from './interactions.events.repository.ts';

/** The default thresholds: 10, 100, 1,000 and every further power of ten. */
const DEFAULT_FIRST_MILESTONE = 10;

/**
 * The thresholds a count crossed moving from `before` to `after` (before < t ≤ after): the
 * type's own list (`data.milestones`), or the powers of ten from 10.
 */
export function milestonesCrossed(before: number, after: number, own: readonly number[] | null): number[] {
  if (own) return own.filter((t) => t > before && t <= after);
  const out: number[] = [];
  for (let t = DEFAULT_FIRST_MILESTONE; t <= after; t *= 10) if (t > before) out.push(t);
  return out;
}

const str = Nullable(Type.String());

const recordedData = Closed({
  interaction_id: Type.String(),
  event_id: Type.String({ description: 'The logical event; versions of one event share it' }),
  app_id: str,
  outcome: str,
  user_id: str,
  contact_id: str,
  anon_id: str,
  metadata: Nullable(Type.Record(Type.String(), Type.Unknown())),
  scope: str,
  journey_id: str,
  broadcast_id: str,
  product_id: str,
  proof_id: str,
  variant_id: str,
  batch_id: str,
  event_type: str,
  source: Nullable(Type.String({ description: 'The client’s own source tag' })),
  channel: Type.Union([Type.Literal('admin'), Type.Literal('public')], {
    description: 'admin: appended with an admin credential; public: submitted under the type’s permissions',
  }),
  at: Timestamp,
});

export const interactionEvents = [
  defineEvent({
    type: 'interaction.recorded',
    description:
      'An interaction event was stored: appended by an admin or submitted by a public caller (a new version of an existing eventId is one too). Updating or deleting a stored event sends nothing. `at` is the event’s time (a backdated append’s own timestamp).',
    data: recordedData,
    example: {
      interaction_id: 'donation',
      event_id: 'evt_Xq2m9Pz4Lk7Rt1Vw',
      app_id: 'donations-app',
      outcome: 'submitted',
      user_id: 'u_123',
      contact_id: 'ct_456',
      anon_id: null,
      metadata: { amount: 25, campaign: 'spring' },
      scope: null,
      journey_id: null,
      broadcast_id: null,
      product_id: 'prod_1',
      proof_id: null,
      variant_id: null,
      batch_id: null,
      event_type: null,
      source: 'web',
      channel: 'public',
      at: '2026-11-25T10:00:00.000Z',
    },
    filterable: ['appId', 'interactionId', 'journeyId'],
  }),
  defineEvent({
    type: 'interaction.milestone',
    description:
      'An interaction’s count of recorded events reached a threshold: 10, 100, 1,000 and every further power of ten, or the type’s own `data.milestones`. Counted per interaction (all outcomes together; deleting an event does not lower it). Sent exactly once per threshold, in the transaction that stored the event that reached it; `count` is the count after that event.',
    data: Closed({
      interaction_id: Type.String(),
      app_id: Type.String(),
      milestone: Type.Integer({ minimum: 1 }),
      count: Type.Integer({ minimum: 1 }),
      reached_at: Timestamp,
    }),
    example: {
      interaction_id: 'donation',
      app_id: 'donations-app',
      milestone: 1000,
      count: 1000,
      reached_at: '2026-11-25T10:00:00.000Z',
    },
    filterable: ['appId', 'interactionId'],
  }),
];

/** The `interaction.recorded` event of a stored row. */
export function recordedEvent(e: EventRow): NewEvent {
  return {
    type: 'interaction.recorded',
    data: {
      interaction_id: e.interaction_id,
      event_id: e.event_id,
      app_id: e.app_id,
      outcome: e.outcome,
      user_id: e.user_id,
      contact_id: e.contact_id,
      anon_id: e.anon_id,
      metadata: e.metadata,
      scope: e.scope,
      journey_id: e.journey_id,
      broadcast_id: e.broadcast_id,
      product_id: e.product_id,
      proof_id: e.proof_id,
      variant_id: e.variant_id,
      batch_id: e.batch_id,
      event_type: e.event_type,
      source: e.source_tag,
      channel: e.source,
      at: e.occurred_at.toISOString(),
    },
    scope: { appId: e.app_id, interactionId: e.interaction_id, journeyId: e.journey_id },
  };
}

/** The `interaction.milestone` events of a count that moved from `before` to `after`. */
export function milestoneEvents(
  interactionId: string,
  appId: string,
  before: number,
  after: number,
  own: readonly number[] | null,
): NewEvent[] {
  const at = new Date().toISOString();
  return milestonesCrossed(before, after, own).map((milestone) => ({
    type: 'interaction.milestone',
    data: { interaction_id: interactionId, app_id: appId, milestone, count: after, reached_at: at },
    scope: { appId, interactionId },
  }));
}
