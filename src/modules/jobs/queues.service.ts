/**
 * Named queues as the API shows them: depth and flow control (concurrency, rate, pause). A
 * queue exists while it has jobs; its settings outlive them (queues.repository.ts). The
 * service's own queues (`<task>:<id>`) hold jobs the API does not show and cannot be changed.
 */
import type { Db } from '../../db/index.ts';
import { badRequest, notFound } from '../../platform/errors.ts';
import { paging } from '../../platform/schemas.ts';
import type { JobEngine } from './engine.ts';
import * as repo from './queues.repository.ts';
import type { Queue, QueueSettingsRequest, QueuesQuery } from './queues.schema.ts';

const toQueue = (r: repo.QueueRow): Queue => ({
  name: r.name,
  concurrency: r.concurrency,
  ratePerSecond: r.rate_per_second,
  paused: r.paused,
  pending: r.pending,
  due: r.due,
  running: r.running,
  finishedLastMinute: r.finished_last_minute,
  failedLastMinute: r.failed_last_minute,
  oldestPendingAt: r.oldest_pending_at?.toISOString() ?? null,
});

export class QueuesService {
  constructor(
    private readonly db: Db,
    /** Wakes the workers when a change lets jobs start. */
    private readonly engine: JobEngine,
  ) {}

  async list(collectionId: string, q: QueuesQuery): Promise<{ items: Queue[]; limit: number; offset: number }> {
    const { limit, offset } = paging(q, 50);
    const rows = await repo.listQueues(this.db, collectionId, { limit, offset });
    return { items: rows.map(toQueue), limit, offset };
  }

  /** A queue with jobs or settings; 404 otherwise. */
  async get(collectionId: string, name: string): Promise<Queue> {
    const [row] = await repo.listQueues(this.db, collectionId, { name, limit: 1, offset: 0 });
    if (!row) throw notFound('Queue');
    return toQueue(row);
  }

  /** Sets concurrency and rate; a queue without jobs yet may be set up ahead of them. */
  async configure(collectionId: string, name: string, body: QueueSettingsRequest): Promise<Queue> {
    ownQueue(name);
    await this.change(collectionId, name, { concurrency: body.concurrency, ratePerSecond: body.ratePerSecond });
    return this.get(collectionId, name);
  }

  async pause(collectionId: string, name: string): Promise<Queue> {
    ownQueue(name);
    await this.change(collectionId, name, { paused: true });
    return this.get(collectionId, name);
  }

  async resume(collectionId: string, name: string): Promise<Queue> {
    ownQueue(name);
    await this.change(collectionId, name, { paused: false });
    return this.get(collectionId, name);
  }

  private async change(collectionId: string, name: string, s: repo.QueueSettings): Promise<void> {
    await repo.upsertQueue(this.db, collectionId, name, s);
    // More room, a faster pace or a resume lets waiting jobs start: the workers look at once.
    await this.engine.announce(this.db, [{ run_at: new Date(), queue_name: name }]);
  }
}

/** The service's own queues are named `<task>:<id>`; a tenant's never contain ':'. */
function ownQueue(name: string): void {
  if (name.includes(':'))
    throw badRequest(
      `Queue "${name}" is one of the service's own (its name contains ':'); only your queues can be changed`,
      {
        field: 'queueName',
      },
    );
}
