/**
 * An app's own tasks: a collection declares a task by name (with its attempts, lease length and
 * payload schema); its jobs are enqueued through the jobs API like the service's own tasks, in
 * the `app` lane, which no engine of ours claims: the app's workers lease them over HTTP
 * (leases.service.ts). Rules: a name is the app's only if it is not one of the service's tasks;
 * at most APP_TASK_LIMITS.tasks per collection; a payload schema is checked and bounded when
 * declared (payload-schemas.ts) and checks every enqueue's payload (400 naming the first
 * problem).
 */
import type { TSchema } from 'typebox';
import type { Db, Queryable } from '../../db/index.ts';
import { badRequest, conflict, notFound } from '../../platform/errors.ts';
import type { TaskDefinition } from '../../platform/tasks.ts';
import * as repo from './app-tasks.repository.ts';
import { APP_TASK_LIMITS, type AppTask, type DeclareAppTaskRequest } from './app-tasks.schema.ts';
import { APP_LANE } from './jobs.settings.ts';
import { firstProblem, PayloadSchemas } from './payload-schemas.ts';

/**
 * How long a process trusts a declaration it read: a bulk enqueue of 1,000 jobs reads it once,
 * not 1,000 times. A change made in this process is seen at once; one made in another process
 * within this time may be missed here (an enqueue checked against the schema just replaced).
 */
const DEFINITION_TTL_MS = 1000;
/** The most declarations a process keeps read (beyond it, the kept ones are forgotten). */
const DEFINITIONS_KEPT = 10_000;

const view = (r: repo.AppTaskRow): AppTask => ({
  name: r.name,
  description: r.description,
  maxAttempts: r.max_attempts,
  leaseSeconds: r.lease_seconds,
  payloadSchema: r.payload_schema ?? null,
  example: r.example ?? null,
  createdAt: r.created_at.toISOString(),
  updatedAt: r.updated_at.toISOString(),
});

export class AppTasksService {
  private readonly schemas = new PayloadSchemas();
  private readonly definitions = new Map<string, { def: TaskDefinition; until: number }>();

  constructor(
    private readonly db: Db,
    /** One of the service's own tasks by name (the jobs engine's registry). */
    private readonly serviceTask: (name: string) => TaskDefinition | undefined,
    /** The attempts of a task declared without `maxAttempts` (JOBS_MAX_ATTEMPTS). */
    private readonly defaultMaxAttempts: number,
  ) {}

  /** Declares a task, or replaces the declaration of that name; `created` says which. */
  async declare(collectionId: string, body: DeclareAppTaskRequest): Promise<{ task: AppTask; created: boolean }> {
    if (this.serviceTask(body.name))
      throw conflict(
        `"${body.name}" is the name of one of the service's own tasks; choose another name for the app's task, e.g. "app.${body.name}"`,
        { field: 'name' },
      );
    if (body.payloadSchema !== undefined) {
      const validate = this.schemas.check(body.payloadSchema);
      if (body.example !== undefined && !validate(body.example))
        throw badRequest(`example does not match payloadSchema: ${firstProblem(validate)}`, { field: 'example' });
    }
    const saved = await this.db.transaction((tx) =>
      repo.upsert(
        tx,
        collectionId,
        {
          name: body.name,
          description: body.description ?? '',
          maxAttempts: body.maxAttempts ?? this.defaultMaxAttempts,
          leaseSeconds: body.leaseSeconds ?? APP_TASK_LIMITS.leaseSeconds.default,
          payloadSchema: body.payloadSchema,
          example: body.example,
        },
        APP_TASK_LIMITS.tasks,
      ),
    );
    if (!saved)
      throw conflict(
        `The collection has ${APP_TASK_LIMITS.tasks} tasks, the most it may declare; delete one it no longer uses (DELETE .../tasks/{name})`,
        { limit: APP_TASK_LIMITS.tasks },
      );
    this.forget(collectionId, body.name);
    return { task: view(saved.row), created: saved.created };
  }

  async list(collectionId: string): Promise<{ items: AppTask[] }> {
    return { items: (await repo.list(this.db, collectionId)).map(view) };
  }

  async get(collectionId: string, name: string): Promise<AppTask> {
    const row = await repo.find(this.db, collectionId, name);
    if (!row) throw notFound('Task');
    return view(row);
  }

  /**
   * Deletes a declaration: new enqueues and leases of the task are refused from now on. Its jobs
   * stay (listed, cancellable); leased ones can still be reported; declaring the task again makes
   * the pending ones leasable again.
   */
  async remove(collectionId: string, name: string): Promise<{ success: true }> {
    if (!(await repo.remove(this.db, collectionId, name))) throw notFound('Task');
    this.forget(collectionId, name);
    return { success: true };
  }

  /**
   * The task definition of a declared task, for the jobs service's enqueue (resolveTask): its
   * jobs go to the app lane, its payload is checked against its schema, and its handler is never
   * run (no engine claims the lane). Undefined when the collection has not declared it.
   */
  async definition(q: Queryable, collectionId: string, name: string): Promise<TaskDefinition | undefined> {
    const key = `${collectionId}\0${name}`;
    const kept = this.definitions.get(key);
    if (kept && kept.until > Date.now()) return kept.def;
    const row = await repo.find(q, collectionId, name);
    if (!row) {
      this.definitions.delete(key);
      return undefined;
    }
    const def = this.toDefinition(row);
    if (this.definitions.size >= DEFINITIONS_KEPT) this.definitions.clear();
    this.definitions.set(key, { def, until: Date.now() + DEFINITION_TTL_MS });
    return def;
  }

  /** The collection's declared task names. */
  names(q: Queryable, collectionId: string): Promise<string[]> {
    return repo.names(q, collectionId);
  }

  /**
   * The lease length of each of `names`, all declared by the collection; a name it has not
   * declared is a 400 that lists those it has.
   */
  async leaseSeconds(collectionId: string, names: string[]): Promise<Map<string, number>> {
    const rows = await repo.findMany(this.db, collectionId, names);
    const found = new Map(rows.map((r) => [r.name, r.lease_seconds]));
    const missing = names.filter((n) => !found.has(n));
    if (missing.length) {
      const declared = await repo.names(this.db, collectionId);
      throw badRequest(
        `tasks: ${missing.map((n) => `"${n}"`).join(', ')} ${missing.length === 1 ? 'is' : 'are'} not declared by this collection (POST .../tasks); declared: ${declared.join(', ') || '(none)'}`,
        { field: 'tasks', unknownTasks: missing, declaredTasks: declared },
      );
    }
    return found;
  }

  private toDefinition(row: repo.AppTaskRow): TaskDefinition {
    const validate = row.payload_schema === null ? undefined : this.schemas.validator(row.payload_schema);
    return {
      name: row.name,
      visible: true,
      lane: APP_LANE,
      maxAttempts: row.max_attempts,
      description: row.description,
      payloadSchema: (row.payload_schema ?? {}) as TSchema,
      example: row.example ?? {},
      parsePayload: (payload) => {
        const value = payload ?? {};
        if (validate && !validate(value)) {
          const problem = firstProblem(validate);
          throw badRequest(`Invalid payload for ${row.name}: ${problem}`, { errors: [problem] });
        }
        return value;
      },
      handler: async () => {
        throw new Error(`"${row.name}" is an app's task: its jobs are leased by the app's workers, not run here`);
      },
    };
  }

  private forget(collectionId: string, name: string): void {
    this.definitions.delete(`${collectionId}\0${name}`);
  }
}
