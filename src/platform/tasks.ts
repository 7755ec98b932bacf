/**
 * Background tasks as modules declare them. A module lists its tasks in its manifest
 * (platform/module.ts); the job engine (modules/jobs) runs them. The definition lives here,
 * not in the jobs module, because every module that has background work declares tasks,
 * and a module depends on the platform, never on a sibling's internals.
 *
 * `defineTask` ties a task to the schema of its payload: the payload is checked when the API
 * accepts a job (400 naming the first problem) and again when the job runs (a payload stored
 * by an older version fails the attempt with the same message), and the handler receives it
 * typed, so no task parses or casts its payload by hand.
 */

import type { Static, TSchema } from 'typebox';
import { Compile } from 'typebox/compile';
import type { Db, Queryable } from '../db/index.ts';
import { badRequest } from './errors.ts';
import { normaliseInstants } from './instants.ts';

export interface TaskJob {
  id: number;
  collectionId: string;
  task: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
}

export interface TaskContext {
  job: TaskJob;
  /** The engine's database handle (not inside a transaction). */
  db: Db;
  /** Aborted when the worker is shutting down and the grace period is over. */
  signal: AbortSignal;
  progress(p: { done: number; total?: number; message?: string }): Promise<void>;
}

export interface TaskDefinition {
  /** Dotted lowerCamel words, e.g. `webhooks.deliver`, `interactions.export`. */
  name: string;
  /** The resolved value is stored as the job's result (JSON). */
  handler(ctx: TaskContext): Promise<unknown>;
  /** Listed by GET .../jobs and enqueueable through POST .../async/jobs. Internal tasks: false. */
  visible: boolean;
  /** Default: JOBS_MAX_ATTEMPTS. */
  maxAttempts?: number;
  /**
   * The slots its jobs run in (default `default`): every lane has its own in each worker, so
   * the jobs of one lane never wait for a slot held by another's (webhook deliveries run in
   * `deliveries`). The lanes are the job engine's (JOBS_LANES in modules/jobs).
   */
  lane?: string;
  /**
   * Checks (and may normalise) a payload the API accepts; throws a 400 to refuse it. Set by
   * defineTask; a task without it (an internal one, or a test's) takes any payload.
   */
  parsePayload?(payload: unknown): unknown;
  /** What a visible task does, for GET .../job-tasks (the console's task picker). */
  description?: string;
  /** The payload's JSON Schema (set by defineTask). */
  payloadSchema?: TSchema;
  /** A payload that works as written, offered as the template (checked against the schema by a test). */
  example?: unknown;
}

export interface TaskSpec<S extends TSchema> {
  name: string;
  /** The payload's schema: it validates, documents and types the payload. */
  payload: S;
  visible: boolean;
  /** What it does, in a sentence or two (GET .../job-tasks). */
  description?: string;
  /** A payload that works as written: the template GET .../job-tasks offers. */
  example?: Static<S>;
  maxAttempts?: number;
  lane?: string;
  /**
   * Rules a schema cannot state (a window's order, say: throw a 400 to refuse) and defaults:
   * returns the payload to store and run.
   */
  prepare?(payload: Static<S>): Static<S>;
  handler(payload: Static<S>, ctx: TaskContext): Promise<unknown>;
}

/** How many schema errors a refused payload names. */
const MAX_REPORTED_ERRORS = 3;

export function defineTask<S extends TSchema>(spec: TaskSpec<S>): TaskDefinition {
  const compiled = Compile(spec.payload);
  const parse = (payload: unknown): Static<S> => {
    const value = payload ?? {};
    if (!compiled.Check(value)) {
      const errors = compiled
        .Errors(value)
        .slice(0, MAX_REPORTED_ERRORS)
        .map((e) => `${e.instancePath || '/'} ${e.message}`);
      throw badRequest(`Invalid payload for ${spec.name}: ${errors.join('; ')}`, { errors });
    }
    // The API's validator rewrites `Instant()` fields to full RFC 3339; a payload is checked
    // by TypeBox instead, so the same is done here.
    const bad = normaliseInstants(spec.payload, value);
    if (bad !== undefined)
      throw badRequest(`Invalid payload for ${spec.name}: ${bad} must be an ISO 8601 date or date-time`, {
        errors: [`${bad} must be an ISO 8601 date or date-time`],
      });
    return spec.prepare ? spec.prepare(value as Static<S>) : (value as Static<S>);
  };
  return {
    name: spec.name,
    visible: spec.visible,
    description: spec.description,
    payloadSchema: spec.payload,
    example: spec.example,
    maxAttempts: spec.maxAttempts,
    lane: spec.lane,
    parsePayload: parse,
    handler: (ctx) => spec.handler(parse(ctx.job.payload), ctx),
  };
}

/** A job to queue: a registered task, its payload, and when and how it runs. */
export interface EnqueueOptions {
  task: string;
  payload?: unknown;
  runAt?: Date;
  /** Higher runs first. */
  priority?: number;
  /** At most one queued job per key (a second enqueue replaces the first). */
  key?: string;
  /** Jobs of one queue run one at a time. */
  queueName?: string;
  maxAttempts?: number;
}

export interface QueuedJob {
  id: number;
  task: string;
  runAt: Date;
  key: string | null;
}

/**
 * The one job-queue port the platform hands every module (`Platform.queue`): enqueue in the
 * caller's transaction (the outbox pattern: the job exists only if the change commits) or on
 * the database. The jobs module provides it; other modules see only this.
 */
export interface JobQueue {
  enqueue(q: Queryable, collectionId: string, job: EnqueueOptions): Promise<QueuedJob>;
  /** Several jobs in one statement, answered in the order given. */
  enqueueMany(q: Queryable, collectionId: string, jobs: EnqueueOptions[]): Promise<QueuedJob[]>;
  registerTask(def: TaskDefinition): void;
  /**
   * Due jobs waiting for a worker, by task, read for the metrics at a scrape (bounded: see
   * the jobs module's `backlog`); the webhooks module reads its deliveries' lag from it.
   */
  backlog(): Promise<readonly TaskBacklog[]>;
}

/** A task's due jobs not yet picked up, and since when the longest-waiting one is due. */
export interface TaskBacklog {
  /** The engine lane: `default`, `deliveries`, or `app` (an app's own tasks, leased over HTTP). */
  lane: string;
  task: string;
  due: number;
  oldestDueAt: Date;
}

/**
 * Thrown by a handler whose attempt failed and that knows when to try again (an HTTP answer's
 * Retry-After, say): the next attempt waits at least `retryAfterMs`, and at least the engine's
 * own backoff. The attempt counts as any failed one.
 */
export class RetryLater extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}
