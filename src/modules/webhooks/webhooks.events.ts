/** What the webhooks module publishes itself (its part of the event catalogue, docs/webhooks.md). */
import { Type } from 'typebox';
import { defineEvent } from '../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';

export const webhookEvents = [
  defineEvent({
    type: 'webhook.disabled',
    description:
      'A registration of the collection was disabled after WEBHOOK_DISABLE_AFTER_FAILURES consecutive failed deliveries. Sent to the collection’s other active registrations that subscribe to it, never to the disabled one; POST /v1/webhooks/{id}/recover sends what it missed once it is enabled again.',
    data: Closed({
      webhook_id: Type.String(),
      url: Type.String(),
      disabled_at: Timestamp,
      disabled_reason: Nullable(Type.String()),
      consecutive_failures: Type.Integer(),
    }),
    example: {
      webhook_id: 'wh_Q1w2E3r4T5y6U7i8',
      url: 'https://hooks.example.com/in',
      disabled_at: '2026-11-25T20:10:00.000Z',
      disabled_reason: '10 consecutive failed deliveries; last: status 500',
      consecutive_failures: 10,
    },
  }),
  defineEvent({
    type: 'webhook.test',
    description:
      'Sent only by POST /v1/webhooks/{id}/test, to that registration, whatever it subscribes to; it cannot be subscribed to.',
    data: Closed({ webhook_id: Type.String(), message: Type.String() }),
    example: { webhook_id: 'wh_Q1w2E3r4T5y6U7i8', message: 'This is a test event sent on request.' },
    subscribable: false,
  }),
];
