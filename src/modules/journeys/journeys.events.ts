/**
 * What the journeys module publishes (its part of the event catalogue, docs/webhooks.md): the
 * milestones maintained progress sees (journeys.milestones.ts). Each event is about one
 * journey: its scope is the journey and its app, so `filters.journeyIds` and `filters.appIds`
 * narrow to it.
 */
import { Type } from 'typebox';
import { defineEvent, type NewEvent } from '../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../platform/schemas.ts';

export type { EventPublisher } from '../../platform/events.ts';

const recipientFields = {
  journey_id: Type.String(),
  journey_name: Nullable(Type.String({ description: 'null when the journey was deleted since' })),
  id_field: Type.Union([Type.Literal('userId'), Type.Literal('contactId')], {
    description:
      'Which identity the recipient is: progress is followed per identity, so an event carrying both ids moves two recipients',
  }),
  user_id: Nullable(Type.String()),
  contact_id: Nullable(Type.String()),
  entered_at: Timestamp,
  interaction_event_id: Nullable(
    Type.String({ description: 'The eventId of the interaction event whose arrival completed it' }),
  ),
};
const filterable = ['journeyId', 'appId'] as const;

export const journeyEvents = [
  defineEvent({
    type: 'journey.step.completed',
    description:
      'A recipient completed a step of a journey, as its maintained progress sees it (journeys whose steps all have an interaction mapping): once per recipient and step, never for a rolled-back event, never again when progress is rebuilt. Sent a moment after the event commits. `completed_at` is the completing event’s time.',
    data: Closed({
      ...recipientFields,
      step_id: Type.String(),
      step_number: Type.Integer({ minimum: 1, description: '1-based position among the journey’s steps' }),
      step_name: Nullable(Type.String()),
      steps_total: Type.Integer(),
      completed_at: Timestamp,
    }),
    example: {
      journey_id: 'jrn_5Tq8LmW2zXc4Vb7N',
      journey_name: 'Onboarding',
      id_field: 'userId',
      user_id: 'u_1842',
      contact_id: null,
      entered_at: '2026-11-20T09:00:00.000Z',
      interaction_event_id: 'evt_Hq2wE9rT1yU5iO3p',
      step_id: 'verify-email',
      step_number: 2,
      step_name: 'Verify the email address',
      steps_total: 3,
      completed_at: '2026-11-20T09:04:10.000Z',
    },
    filterable,
  }),
  defineEvent({
    type: 'journey.completed',
    description:
      'A recipient completed the last step of a journey (sent with that step’s journey.step.completed): once per recipient, as maintained progress sees it.',
    data: Closed({ ...recipientFields, steps_total: Type.Integer(), completed_at: Timestamp }),
    example: {
      journey_id: 'jrn_5Tq8LmW2zXc4Vb7N',
      journey_name: 'Onboarding',
      id_field: 'contactId',
      user_id: null,
      contact_id: 'ct_77',
      entered_at: '2026-11-20T09:00:00.000Z',
      interaction_event_id: 'evt_Zx1cV2bN3mQ4wE5r',
      steps_total: 3,
      completed_at: '2026-11-21T17:30:00.000Z',
    },
    filterable,
  }),
];

/** A noted milestone with what its event names of the journey. */
export interface MilestoneRow {
  seq: number;
  journey_id: string;
  id_field: 'userId' | 'contactId';
  rid: string;
  /** '' for the journey's completion. */
  step_id: string;
  step: number;
  step_name: string | null;
  n_steps: number;
  entered_at: Date;
  completed_at: Date;
  event_id: string | null;
  journey_name: string | null;
  app_id: string | null;
}

export function milestoneEvent(m: MilestoneRow): NewEvent {
  const common = {
    journey_id: m.journey_id,
    journey_name: m.journey_name,
    id_field: m.id_field,
    user_id: m.id_field === 'userId' ? m.rid : null,
    contact_id: m.id_field === 'contactId' ? m.rid : null,
    entered_at: m.entered_at.toISOString(),
    interaction_event_id: m.event_id,
  };
  const scope = { journeyId: m.journey_id, appId: m.app_id };
  if (m.step_id === '') {
    return {
      type: 'journey.completed',
      data: { ...common, steps_total: m.n_steps, completed_at: m.completed_at.toISOString() },
      scope,
    };
  }
  return {
    type: 'journey.step.completed',
    data: {
      ...common,
      step_id: m.step_id,
      step_number: m.step,
      step_name: m.step_name,
      steps_total: m.n_steps,
      completed_at: m.completed_at.toISOString(),
    },
    scope,
  };
}
