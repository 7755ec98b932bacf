/**
 * The interactions module's service, composed by its manifest (index.ts) from four parts,
 * each with its own repository and given its collaborators through its constructor:
 * - types (interactions.types.service.ts): the CRUD of interaction types, and the lookups of
 *   them the other parts make;
 * - events (interactions.events.service.ts): append, submit and update of events, and what
 *   recording one publishes (`interaction.recorded`, milestones) and queues (effects);
 * - reads (interactions.reads.service.ts): queries, counts by outcome, aggregates, a user's
 *   own events, summaries, and the download of an export;
 * - counters (interactions.counters.service.ts): each interaction's total, and the compaction
 *   of the striped counters.
 * Here: what the manifest and other code use of the whole.
 */
import type { Db } from '../../db/index.ts';
import type { TaskDefinition } from '../../platform/tasks.ts';
import { InteractionCounters } from './interactions.counters.service.ts';
import { InteractionEventWriter } from './interactions.events.service.ts';
import { InteractionReads } from './interactions.reads.service.ts';
import type { InteractionsSettings } from './interactions.settings.ts';
import { InteractionTypes } from './interactions.types.service.ts';

export interface InteractionParts {
  types: InteractionTypes;
  events: InteractionEventWriter;
  reads: InteractionReads;
  counters: InteractionCounters;
}

export class InteractionsService implements InteractionParts {
  readonly types: InteractionTypes;
  readonly events: InteractionEventWriter;
  readonly reads: InteractionReads;
  readonly counters: InteractionCounters;

  constructor(parts: InteractionParts);
  /**
   * TRANSITION: bench/interactions.bench.ts builds the service from a database to fold the
   * counters; its parts publish nothing and run no effects. The manifest gives the parts.
   */
  constructor(db: Db, settings: InteractionsSettings);
  constructor(partsOrDb: InteractionParts | Db, settings?: InteractionsSettings) {
    const parts = settings === undefined ? (partsOrDb as InteractionParts) : standalone(partsOrDb as Db, settings);
    this.types = parts.types;
    this.events = parts.events;
    this.reads = parts.reads;
    this.counters = parts.counters;
  }

  /** The `interactions.effect` task (registered by the manifest). */
  effectTask(): TaskDefinition[] {
    return this.events.effectTask();
  }

  /** Folds the striped counters of past hours (see InteractionCounters.compact). */
  compactCounters(now = Date.now()): Promise<number> {
    return this.counters.compact(now);
  }

  /** In worker processes (see the manifest): counter compaction every INTERACTIONS_COMPACT_EVERY_MS. */
  startHousekeeping(): void {
    this.counters.startHousekeeping();
  }

  close(): void {
    this.counters.stopHousekeeping();
    this.events.close();
  }
}

/** TRANSITION (see the constructor): the manifest's wiring without the outlets. */
function standalone(db: Db, settings: InteractionsSettings): InteractionParts {
  const types = new InteractionTypes(db);
  const counters = new InteractionCounters(db, settings);
  const events = new InteractionEventWriter(db, settings, types, counters);
  return { types, events, reads: new InteractionReads(db, settings, types), counters };
}
