/**
 * The event catalogue: every event type the service publishes, gathered from the modules'
 * manifests (`events`, src/platform/events.ts) by buildApp. One source for four readers:
 * - `GET /v1/webhooks/event-types` (description, JSON Schema of `data`, example);
 * - the OpenAPI document's `webhooks` section (and through it the typed client's union);
 * - subscriptions: `events` may name a type, a family (`case.*`) or `*`; anything else is a
 *   400 naming the pattern;
 * - the outbox: each published event is checked against its definition. Strict (tests, and
 *   WEBHOOK_EVENTS_STRICT=true) an event outside the catalogue throws, failing the change
 *   that published it, so a test catches it; otherwise it is sent and logged once per type,
 *   as a receiver is better served by an event with an undocumented field than by none.
 */
import { type TSchema, Type } from 'typebox';
import { Compile, type Validator } from 'typebox/compile';
import { badRequest } from '../../platform/errors.ts';
import { type EventDefinition, eventFamily, type NewEvent } from '../../platform/events.ts';

interface Log {
  error(obj: object, msg?: string): void;
}

/** One type as `GET /v1/webhooks/event-types` answers it. */
export interface EventTypeEntry {
  type: string;
  family: string;
  description: string;
  schema: TSchema;
  example: Record<string, unknown>;
  filterable: string[];
  subscribable: boolean;
}

/** The envelope every delivery carries around `data`. */
const envelope = (type: string, data: TSchema) =>
  Type.Object(
    {
      type: Type.Literal(type),
      id: Type.String({ description: 'The event id (evt_…), the same for every delivery and attempt of it' }),
      created_at: Type.String({ format: 'date-time' }),
      data,
    },
    { additionalProperties: false },
  );

export class EventCatalogue {
  private readonly definitions = new Map<string, EventDefinition>();
  private readonly validators = new Map<string, Validator>();
  private readonly warned = new Set<string>();

  constructor(
    private readonly strict: boolean,
    private readonly log: Log,
  ) {}

  /** Adds definitions; a type defined twice is a programming error. */
  add(definitions: readonly EventDefinition[]): void {
    for (const d of definitions) {
      if (this.definitions.has(d.type)) throw new Error(`Event type ${d.type} is defined twice`);
      this.definitions.set(d.type, d);
    }
  }

  has(type: string): boolean {
    return this.definitions.has(type);
  }

  /** Every type, sorted by type. */
  list(): EventTypeEntry[] {
    return [...this.definitions.values()]
      .sort((a, b) => a.type.localeCompare(b.type))
      .map((d) => ({
        type: d.type,
        family: eventFamily(d.type),
        description: d.description,
        schema: d.data,
        example: d.example,
        filterable: [...(d.filterable ?? [])].map((k) => `${k}s`),
        subscribable: d.subscribable !== false,
      }));
  }

  /**
   * Checks what a registration subscribes to: each entry a subscribable type, `family.*` of a
   * known family, or `*`. Throws 400 naming the first that is none of these.
   */
  checkSubscription(patterns: readonly string[]): void {
    const subscribable = [...this.definitions.values()].filter((d) => d.subscribable !== false);
    const families = new Set(subscribable.map((d) => eventFamily(d.type)));
    for (const p of patterns) {
      if (p === '*') continue;
      if (p.endsWith('.*') && families.has(p.slice(0, -2))) continue;
      const d = this.definitions.get(p);
      if (d && d.subscribable !== false) continue;
      throw badRequest(
        `Unknown event type "${p}" in events: use a type from GET /v1/webhooks/event-types, a family wildcard such as "${[...families][0] ?? 'link'}.*", or "*"`,
        { field: 'events', value: p },
      );
    }
  }

  /** Whether a subscription's patterns cover a type. */
  static covers(patterns: readonly string[], type: string): boolean {
    for (const p of patterns) {
      if (p === type || p === '*') return true;
      if (p.endsWith('.*') && eventFamily(type) === p.slice(0, -2)) return true;
    }
    return false;
  }

  /** Checks a published event against its definition (see the top: strict throws, else logs once). */
  check(event: NewEvent): void {
    const problem = this.problem(event);
    if (!problem) return;
    if (this.strict) throw new Error(`Event ${event.type} is not in the catalogue: ${problem}`);
    if (this.warned.has(event.type)) return;
    this.warned.add(event.type);
    this.log.error({ type: event.type, problem }, 'webhooks: an event does not match the catalogue');
  }

  /** Why an event does not match the catalogue, or undefined when it does. */
  problem(event: NewEvent): string | undefined {
    const validator = this.validator(event.type);
    if (!validator) return 'unknown type';
    if (validator.Check(event.data)) return undefined;
    const first = validator.Errors(event.data)[0];
    return first ? `${first.instancePath || '/'} ${first.message}` : 'data does not match its schema';
  }

  /** The OpenAPI 3.1 `webhooks` section: one POST per type, its body the envelope. */
  openApiWebhooks(): Record<string, unknown> {
    const out: Record<string, unknown> = {};
    for (const e of this.list()) {
      out[e.type] = {
        post: {
          operationId: `event_${e.type.replace(/\W+/g, '_')}`,
          summary: e.description.split('. ')[0],
          description: e.description,
          tags: ['events'],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: { ...envelope(e.type, e.schema), title: eventSchemaName(e.type) },
                example: { type: e.type, id: 'evt_example', created_at: '2026-01-01T00:00:00.000Z', data: e.example },
              },
            },
          },
          responses: { '200': { description: 'Any 2xx acknowledges the delivery; anything else is retried' } },
        },
      };
    }
    return out;
  }

  private validator(type: string): Validator | undefined {
    let v = this.validators.get(type);
    if (!v) {
      const d = this.definitions.get(type);
      if (!d) return undefined;
      v = Compile(d.data);
      this.validators.set(type, v);
    }
    return v;
  }
}

/** `journey.step.completed` → `JourneyStepCompletedEvent`. */
export const eventSchemaName = (type: string): string =>
  `${type
    .split(/[._-]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join('')}Event`;
