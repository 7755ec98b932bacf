/**
 * The webhook events of app objects (docs/webhooks.md, "App objects"), for the three kinds
 * from their one description (kinds.ts): `<kind>.created`, `<kind>.updated` (what changed,
 * from and to, as the case history records it) and `<kind>.deleted`, and `thread.replied`.
 * Both the catalogue's schemas and the events a service publishes are built here from the
 * kind, so the two cannot drift apart, and no kind has a copy of its own.
 *
 * An event's `data`: the object's id (`case_id`, `thread_id`, `record_id`), `app_id`, every
 * field that holds one plain value (status, category, record_type, ref, visibility, contact
 * and author ids, times: `scalarColumns`) under its column name, and, on created and updated,
 * each JSON field (the sections, a thread's body and tags, a record's metadata and facet rule)
 * that measures at most EVENT_JSON_MAX_BYTES; a larger one is named in `omitted` (read it from
 * the API). A deleted object's event carries no JSON fields: a bulk delete reads back only the
 * plain fields of what it deleted. `actor` is who made the change: the admin key (`super_admin`,
 * or `job:<id>` for a task) or the user. Scope: the app, for `filters.appIds`.
 */
import { type TProperties, type TSchema, Type } from 'typebox';
import type { Queryable } from '../../../db/index.ts';
import { defineEvent, type EventDefinition, type EventPublisher, type NewEvent } from '../../../platform/events.ts';
import { Closed, Nullable, Timestamp } from '../../../platform/schemas.ts';
import { EVENT_JSON_MAX_BYTES } from './bounds.ts';
import { CASE, type FieldKind, fieldOf, type KindName, type ObjectKind, RECORD, THREAD } from './kinds.ts';
import type { Actor, Row } from './sections.ts';

/**
 * A change of one object as the case history records it: every field it changed (a section's
 * keys as `data.key`) and, for fields that are not sections, their values before and after.
 */
export interface Change {
  changedFields: string[];
  changes: Record<string, { from: unknown; to: unknown }>;
}

/** Events given to one `publish` call; a bulk change of thousands of objects goes in several. */
const PUBLISH_CHUNK = 500;

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : (v ?? null));
const bytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v) ?? '', 'utf8');
const filterable = ['appId'] as const;

/** The kind's fields of one plain value, by column, with how each is stored. */
const plainFields = (kind: ObjectKind): [string, Exclude<FieldKind, 'json'>][] =>
  Object.values(kind.fields).flatMap((d) => (d.kind === 'json' ? [] : [[d.col, d.kind] as [string, typeof d.kind]]));

const PLAIN_SCHEMA: Record<Exclude<FieldKind, 'json'>, () => TSchema> = {
  text: () => Nullable(Type.String()),
  num: () => Nullable(Type.Number()),
  int: () => Nullable(Type.Integer()),
  ts: () => Nullable(Timestamp),
};
/** JSON columns that are not open objects; every other (sections, body, metadata) is one. */
const JSON_SCHEMA: Record<string, () => TSchema> = {
  tags: () => Type.Array(Type.String()),
  facet_rule: () => Nullable(Type.Record(Type.String(), Type.Unknown())),
};
const jsonSchema = (col: string) =>
  Type.Optional((JSON_SCHEMA[col] ?? (() => Type.Record(Type.String(), Type.Unknown())))());

const ActorSchema = Nullable(
  Closed(
    {
      role: Type.Union([Type.Literal('admin'), Type.Literal('user')]),
      id: Type.String({
        description: 'The admin key id (`super_admin`; `job:<id>` for a background task), or the user id',
      }),
      contact_id: Nullable(Type.String({ description: 'The user’s contact; null for admins' })),
    },
    { description: 'Who made the change' },
  ),
);
const actorData = (a: Actor | undefined) =>
  a ? { role: a.role, id: a.actorId, contact_id: a.role === 'user' ? a.contactId : null } : null;

const Omitted = Type.Array(Type.String(), {
  description: `JSON fields left out because they measure more than ${EVENT_JSON_MAX_BYTES / 1024} KiB; read them from the API`,
});
const ChangeList = Type.Array(Closed({ field: Type.String(), from: Type.Unknown(), to: Type.Unknown() }), {
  description: `The changed fields that are not sections, with their values before and after (a JSON field such as a thread’s body only while both together measure at most ${(2 * EVENT_JSON_MAX_BYTES) / 1024} KiB)`,
});

/** The name a change of `name` (the API's field name, or `section.key`) has in an event. */
const eventField = (kind: ObjectKind, name: string) =>
  name.includes('.') ? name : (fieldOf(kind, name)?.col ?? name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`));

/**
 * What each kind's events carry beyond the common fields: a case's update may have appended
 * an entry to its history (POST …/cases/{caseId}/history).
 */
const UPDATED_EXTRA: Partial<Record<KindName, TProperties>> = {
  case: {
    history_entry: Type.Optional(
      Closed(
        {
          target: Type.Union([Type.Literal('owner'), Type.Literal('admin')]),
          entry: Nullable(Type.Record(Type.String(), Type.Unknown())),
        },
        {
          description: `The history entry this change appended (to the owner’s or the admin’s history); entry null when it measures more than ${EVENT_JSON_MAX_BYTES / 1024} KiB`,
        },
      ),
    ),
  },
};

/** Builds and publishes one kind's events, in the transaction of the change. */
export class ObjectEvents {
  constructor(
    readonly kind: ObjectKind,
    private readonly publisher?: EventPublisher,
  ) {}

  /** The id, app and plain fields of an object (all a deleted object's event carries). */
  fields(row: Row): Record<string, unknown> {
    const out: Record<string, unknown> = { [`${this.kind.name}_id`]: row.id, app_id: row.app_id };
    for (const [col] of plainFields(this.kind)) out[col] = iso(row[col]);
    out.created_at = iso(row.created_at);
    out.updated_at = iso(row.updated_at);
    out.deleted_at = iso(row.deleted_at);
    return out;
  }

  /** The plain fields and each JSON field within the bound; the others named in `omitted`. */
  private withJson(row: Row): Record<string, unknown> {
    const out = this.fields(row);
    const omitted: string[] = [];
    for (const col of this.kind.sized) {
      if (row[col] === undefined) continue;
      if (bytes(row[col]) <= EVENT_JSON_MAX_BYTES) out[col] = row[col];
      else omitted.push(col);
    }
    out.omitted = omitted;
    return out;
  }

  private event(type: string, row: Row, data: Record<string, unknown>, actor: Actor | undefined): NewEvent {
    return {
      type: `${this.kind.name}.${type}`,
      data: { ...data, actor: actorData(actor) },
      scope: { appId: row.app_id },
    };
  }

  created(row: Row, actor: Actor | undefined): NewEvent {
    return this.event('created', row, this.withJson(row), actor);
  }

  /** undefined when the write changed no stored value (a PATCH sending what is stored). */
  updated(
    row: Row,
    actor: Actor | undefined,
    change: Change,
    extra: Record<string, unknown> = {},
  ): NewEvent | undefined {
    if (change.changedFields.length === 0) return undefined;
    const changes = Object.entries(change.changes)
      .filter(([, c]) => bytes(c) <= 2 * EVENT_JSON_MAX_BYTES)
      .map(([name, c]) => ({ field: eventField(this.kind, name), from: c.from ?? null, to: c.to ?? null }));
    return this.event(
      'updated',
      row,
      {
        ...this.withJson(row),
        changed_fields: change.changedFields.map((name) => eventField(this.kind, name)),
        changes,
        ...extra,
      },
      actor,
    );
  }

  deleted(row: Row, actor: Actor | undefined): NewEvent {
    return this.event('deleted', row, this.fields(row), actor);
  }

  /** A thread's new reply: the thread's plain fields and the reply (its own fields within the bound). */
  replied(row: Row, actor: Actor | undefined, reply: Record<string, unknown> & { seq: number }): NewEvent {
    const { seq, at, authorId, authorType, ...content } = reply;
    const fits = bytes(content) <= EVENT_JSON_MAX_BYTES;
    return this.event(
      'replied',
      row,
      {
        ...this.fields(row),
        reply: { seq, at: iso(at), author_id: authorId, author_type: authorType, content: fits ? content : null },
        omitted: fits ? [] : ['reply.content'],
      },
      actor,
    );
  }

  /** Publishes in the transaction `q` of the change; nothing without a publisher (a bare service). */
  async publish(q: Queryable, collectionId: string, events: readonly (NewEvent | undefined)[]): Promise<void> {
    if (!this.publisher) return;
    const list = events.filter((e): e is NewEvent => e !== undefined);
    for (let i = 0; i < list.length; i += PUBLISH_CHUNK) {
      await this.publisher.publish(q, collectionId, list.slice(i, i + PUBLISH_CHUNK));
    }
  }
}

/** An example object of each kind and a change of it, for the catalogue (built as real events are). */
const at = (s: string) => new Date(`2026-11-20T${s}Z`);
const common = (id: string, appId: string): Row & Record<string, unknown> => ({
  id,
  collection_id: 'acme',
  app_id: appId,
  visibility: 'owner',
  contact_id: 'ct_7Hq2LmN4',
  status: 'open',
  product_id: 'prod_kettle',
  proof_id: null,
  data: { subject: 'Lid does not close' },
  owner: {},
  admin: {},
  created_at: at('09:00:00.000'),
  updated_at: at('09:30:00.000'),
  deleted_at: null,
});
const EXAMPLES: Record<KindName, { row: Row; change: Change }> = {
  case: {
    row: {
      ...common('case_4fT9kQ2mXo1PzR4v', 'support'),
      status: 'resolved',
      ref: 'SUP-1042',
      priority: 2,
      category: 'warranty',
      assigned_to: 'agent_12',
      closed_at: at('09:30:00.000'),
    },
    change: {
      changedFields: ['status', 'closedAt'],
      changes: { status: { from: 'open', to: 'resolved' }, closedAt: { from: null, to: '2026-11-20T09:30:00.000Z' } },
    },
  },
  thread: {
    row: {
      ...common('thr_Zx0aB3kR7tWJm1q9', 'forum'),
      visibility: 'public',
      slug: 'kettle-lid',
      title: 'Kettle lid does not close',
      author_id: 'u_81',
      author_type: 'customer',
      parent_type: 'case',
      parent_id: 'case_4fT9kQ2mXo1PzR4v',
      reply_count: 3,
      last_reply_at: at('09:30:00.000'),
      body: { text: 'Since last week the lid springs open.' },
      tags: ['kettle'],
    },
    change: { changedFields: ['title'], changes: { title: { from: 'Lid', to: 'Kettle lid does not close' } } },
  },
  record: {
    row: {
      ...common('rec_Qp8sLm2Nx4Vb6Zc1', 'registrations'),
      status: 'active',
      record_type: 'registration',
      ref: 'serial:KT-2291-0042',
      scope_type: 'product',
      scope_id: 'prod_kettle',
      custom_id: 'KT-2291-0042',
      custom_id_normalized: 'kt-2291-0042',
      source_system: null,
      variant_id: null,
      batch_id: null,
      author_id: 'u_81',
      author_type: 'customer',
      parent_type: null,
      parent_id: null,
      starts_at: null,
      expires_at: new Date('2028-11-20T00:00:00.000Z'),
      specificity: 20,
      facet_rule: null,
      singleton_key: null,
      data: { label: 'My kettle', purchasedAt: '2026-11-01' },
      metadata: {},
    },
    change: { changedFields: ['data.label'], changes: {} },
  },
};
const EXAMPLE_ACTOR: Actor = { role: 'admin', actorId: 'key_8HkQ2mXo1PzR4vTe' };

/** The catalogue entries of one kind: created, updated, deleted (and a thread's replied). */
function kindEventDefinitions(kind: ObjectKind): EventDefinition[] {
  const ex = EXAMPLES[kind.name];
  const events = new ObjectEvents(kind);
  const plain: TProperties = {
    [`${kind.name}_id`]: Type.String(),
    app_id: Type.String(),
    ...Object.fromEntries(plainFields(kind).map(([col, k]) => [col, PLAIN_SCHEMA[k]()])),
    created_at: Timestamp,
    updated_at: Timestamp,
    deleted_at: Nullable(Timestamp),
  };
  const json = Object.fromEntries(kind.sized.map((col) => [col, jsonSchema(col)]));
  const whole = { ...plain, ...json, omitted: Omitted, actor: ActorSchema };
  const a = `A ${kind.name}`;
  const jsonNote = `Its plain fields, and its JSON fields (${kind.sized.join(', ')}) each while it measures at most ${EVENT_JSON_MAX_BYTES / 1024} KiB (a larger one is named in \`omitted\`).`;
  const defs: EventDefinition[] = [
    defineEvent({
      type: `${kind.name}.created`,
      description: `${a} was created (admin or public route${kind === RECORD ? ', an upsert by ref, a singletonPer create or an import that created it' : ''}). ${jsonNote}`,
      data: Closed(whole),
      example: events.created(ex.row, EXAMPLE_ACTOR).data,
      filterable,
    }),
    defineEvent({
      type: `${kind.name}.updated`,
      description: `${a} was changed${kind === CASE ? ' (a PATCH, a history entry appended with a change of status, priority or assignee, or the cases.bulkStatus task)' : kind === RECORD ? ' (a PATCH, an upsert by ref, a singletonPer create or an import that found it, a restore)' : ' (a PATCH; a reply is thread.replied)'}. \`changed_fields\` names every field that changed (a section’s keys as \`data.key\`), \`changes\` the others’ values before and after, as the case history records them; a write that changes nothing publishes nothing. ${jsonNote}`,
      data: Closed({
        ...whole,
        changed_fields: Type.Array(Type.String()),
        changes: ChangeList,
        ...UPDATED_EXTRA[kind.name],
      }),
      example: (events.updated(ex.row, EXAMPLE_ACTOR, ex.change) as NewEvent).data,
      filterable,
    }),
    defineEvent({
      type: `${kind.name}.deleted`,
      description: `${a} was deleted (soft: \`deleted_at\` set${kind === RECORD ? '; a bulk delete sends one per record' : ''}). Its plain fields, no JSON fields.`,
      data: Closed({ ...plain, actor: ActorSchema }),
      example: events.deleted({ ...ex.row, deleted_at: at('10:00:00.000') }, EXAMPLE_ACTOR).data,
      filterable,
    }),
  ];
  if (kind === THREAD) {
    defs.push(
      defineEvent({
        type: 'thread.replied',
        description: `Someone replied to a thread. The thread’s plain fields (\`reply_count\` and \`last_reply_at\` include this reply) and the reply: its number in the thread (\`seq\`, 1 the first; \`…/replies?offset=seq-1&limit=1\` reads it), time, author and its own fields (\`content\`: text, attachments, …) while they measure at most ${EVENT_JSON_MAX_BYTES / 1024} KiB (a reply may hold 64 KiB; beyond, content is null and \`omitted\` names \`reply.content\`).`,
        data: Closed({
          ...plain,
          reply: Closed({
            seq: Type.Integer({ minimum: 1 }),
            at: Timestamp,
            author_id: Type.String(),
            author_type: Type.String(),
            content: Nullable(Type.Record(Type.String(), Type.Unknown())),
          }),
          omitted: Omitted,
          actor: ActorSchema,
        }),
        example: events.replied(
          ex.row,
          { role: 'user', actorId: 'u_81', userId: 'u_81', contactId: 'ct_7Hq2LmN4' },
          {
            seq: 3,
            at: '2026-11-20T09:30:00.000Z',
            authorId: 'u_81',
            authorType: 'customer',
            text: 'Thanks, the new lid fits.',
          },
        ).data,
        filterable,
      }),
    );
  }
  return defs;
}

/** Every event type app objects publish (the module's manifest `events`). */
export const appObjectEvents: EventDefinition[] = [CASE, THREAD, RECORD].flatMap(kindEventDefinitions);
