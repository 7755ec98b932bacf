/**
 * The interactions module's service, composed by its manifest (index.ts) from five parts,
 * each with its own repository and given its collaborators through its constructor:
 * - types (interactions.types.service.ts): the CRUD of interaction types, and the lookups of
 *   them the other parts make;
 * - events (interactions.events.service.ts): append, submit and update of events, and what
 *   recording one publishes (`interaction.recorded`, milestones) and queues (effects);
 * - reads (interactions.reads.service.ts): queries, counts by outcome, aggregates, a user's
 *   own events, summaries, and the download of an export;
 * - counters (interactions.counters.service.ts): each interaction's total, and the compaction
 *   of the striped counters;
 * - partitions (interactions.partitions.ts): the monthly partitions of the events, and their
 *   retention.
 * Here: what the manifest and other code use of the whole.
 */
import type { TaskDefinition } from '../../platform/tasks.ts';
import type { InteractionCounters } from './interactions.counters.service.ts';
import type { InteractionEventWriter } from './interactions.events.service.ts';
import type { EventPartitions } from './interactions.partitions.ts';
import type { InteractionReads } from './interactions.reads.service.ts';
import type { InteractionTypes } from './interactions.types.service.ts';

export interface InteractionParts {
  types: InteractionTypes;
  events: InteractionEventWriter;
  reads: InteractionReads;
  counters: InteractionCounters;
  partitions: EventPartitions;
}

export class InteractionsService implements InteractionParts {
  readonly types: InteractionTypes;
  readonly events: InteractionEventWriter;
  readonly reads: InteractionReads;
  readonly counters: InteractionCounters;
  readonly partitions: EventPartitions;

  constructor(parts: InteractionParts) {
    this.types = parts.types;
    this.events = parts.events;
    this.reads = parts.reads;
    this.counters = parts.counters;
    this.partitions = parts.partitions;
  }

  /** The `interactions.effect` task (registered by the manifest). */
  effectTask(): TaskDefinition[] {
    return this.events.effectTask();
  }

  /** Folds the striped counters of past hours (see InteractionCounters.compact). */
  compactCounters(now = Date.now()): Promise<number> {
    return this.counters.compact(now);
  }

  close(): void {
    this.events.close();
  }
}
