/**
 * Interactions: what users do, recorded as events and counted.
 * - interaction type: a definition (id, appId, permissions, data) events refer to.
 * - permissions: who may submit (allowPublicSubmit, allowAnonymousSubmit, requireAuth,
 *   allowedOrigins, startAt/endAt), how often (uniquePerUser, uniquePerAnonId, their windows,
 *   uniqueOutcome), and who may read (allowOwnRead, allowPublicSummary, allowAuthenticatedSummary).
 * - event: one row of interaction_events; `eventId` groups versions of one logical event.
 * - append (admin, no checks) vs submit (public, every permission enforced).
 * - dedupeLatest: count only each identity's latest event per interaction.
 * - export: the `interactions.export` job task, its file streamed by the download route.
 * - events: `interaction.recorded` per event stored, `interaction.milestone` when an
 *   interaction's count reaches a threshold (10, 100, ... or the type's `data.milestones`),
 *   published in the event's transaction.
 * - effect: an entry of the type's `data.effects` (`webhook`, `appRecord`; others are kept and
 *   reported not run), run per event as an `interactions.effect` job after the event commits.
 * - parts (composed in `create` below, each with its own service and repository file): types
 *   (CRUD), events (append, submit, update; what recording publishes and queues), reads
 *   (queries, counts, aggregates, by-user, summaries, the export's pages), counters (each
 *   interaction's total, compaction of the striped counters). `InteractionsService` holds them.
 *
 * Contract with journeys (its repository, and its triggers and functions of migrations 0204
 * and 0207, read `interaction_events` directly; they change none of it). These columns keep
 * their names, types and meaning:
 *   collection_id  the tenant;
 *   journey_id     an event carrying it enters its recipient into that journey;
 *   interaction_id, outcome  the pair a journey step's mapping matches (exact text equality);
 *   user_id, contact_id      the recipient, by the journey's idField (null: not that kind);
 *   occurred_at    when the event happened: entry is the first, a step the first at or after
 *                  entering it;
 *   deleted_at     null while the event counts; a deleted event enters and completes nothing;
 *   event_id       the event a journey milestone names (0207: journey_milestones.event_id).
 * Every write of events is an INSERT, UPDATE or DELETE on the table with its triggers on, so
 * the statement triggers `journey_progress_insert/update/delete` (0204) see each change in
 * its own transaction, and journeys' `waitForEventWriters` finds a writer by its
 * RowExclusiveLock on the table. A bulk load with the triggers off (the bench's seed) is
 * followed by `interactions_rebuild_derived` (0204), which hands journeys' progress back to
 * its rebuild task.
 */

import { defineModule, EVERY_ROLE } from '../../platform/module.ts';
import { OutboundHttp } from '../../platform/outbound-http.ts';
import { appObjectsModule } from '../app-objects/index.ts';
import { webhooksModule } from '../webhooks/index.ts';
import { InteractionCounters } from './interactions.counters.service.ts';
import { EFFECT_LIMITS } from './interactions.effect-rules.ts';
import { EffectRunner } from './interactions.effects.ts';
import { InteractionEventWriter } from './interactions.events.service.ts';
import { interactionEvents } from './interactions.events.ts';
import { exportTask } from './interactions.export.ts';
import { EventPartitions } from './interactions.partitions.ts';
import { InteractionReads } from './interactions.reads.service.ts';
import { interactionsRoutes } from './interactions.routes.ts';
import { InteractionsService } from './interactions.service.ts';
import { interactionsSettings } from './interactions.settings.ts';
import { InteractionTypes } from './interactions.types.service.ts';

export { InteractionCounters } from './interactions.counters.service.ts';
export { EFFECT_TASK } from './interactions.effects.ts';
export { EXPORT_TASK } from './interactions.export.ts';
export { originAllowed } from './interactions.origins.ts';
export { toEventRow } from './interactions.present.ts';
export { IdField } from './interactions.schema.ts';
export { InteractionsService } from './interactions.service.ts';
export { type InteractionsSettings, interactionsSettings } from './interactions.settings.ts';

/** How much of an effect receiver's answer is read (it is not kept: the job's result says the status). */
const EFFECT_EXCERPT_BYTES = 1024;

export const interactionsModule = defineModule({
  name: 'interactions',
  needs: [webhooksModule, appObjectsModule],
  settings: interactionsSettings,
  tables: {
    owns: [
      'interaction_types',
      'interaction_events',
      // interaction_events' partition for times no month covers (0911); the monthly ones are
      // made and dropped by the upkeep (interactions.partitions.ts).
      'interaction_events_default',
      'interaction_counts_hourly',
      'interaction_latest',
      'interaction_latest_counts',
      'interaction_totals',
      'interaction_exports',
      'interaction_export_chunks',
    ],
    // An export file goes with the job that wrote it (a foreign key, migration 0302).
    reads: ['collections', 'jobs'],
  },
  create: ({ db, log, queue, analytics }, settings, deps) => {
    // Effects' requests follow the webhooks' SSRF rule, WEBHOOK_ALLOW_PRIVATE_NETWORKS included.
    const http = new OutboundHttp({
      allowPrivateNetworks: deps.webhooks.settings.allowPrivateNetworks,
      maxTimeoutMs: EFFECT_LIMITS.maxTimeoutMs,
      excerptBytes: EFFECT_EXCERPT_BYTES,
    });
    const effects = new EffectRunner(http, deps.appObjects);
    // The parts, each given the others it uses: events are written for types and counted;
    // reads look types up.
    const types = new InteractionTypes(db);
    const counters = new InteractionCounters(db, settings);
    const events = new InteractionEventWriter(db, settings, types, counters, log, {
      events: deps.webhooks,
      jobs: queue,
      effects,
    });
    const reads = new InteractionReads(db, analytics, types);
    const partitions = new EventPartitions(db, settings);
    return new InteractionsService({ types, events, reads, counters, partitions });
  },
  routes: interactionsRoutes,
  events: interactionEvents,
  tasks: (service) => [exportTask(), ...service.effectTask()],
  background: (service) => [{ roles: EVERY_ROLE, start: () => undefined, stop: () => service.close() }],
  // Counter compaction in one worker of the deployment per tick (a system schedule); any
  // number of runs at once would still be safe (repo.compactCounters).
  // and the events' monthly partitions made ahead and aged out (interactions.partitions.ts).
  housekeeping: (service) => [service.counters.housekeeping(), service.partitions.housekeeping()],
});
