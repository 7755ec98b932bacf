/**
 * The event catalogue (`GET /v1/webhooks/event-types`): every type the service sends, grouped
 * by family, each with its description, the JSON Schema of its `data` and an example. The
 * same list feeds the registration form's event choice and the delivery log's filter, so the
 * console never names a type the service does not know.
 */
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { A, DataTable, Empty, ErrorNote, json, Loading, useAsync } from '../ui.tsx';

export type EventType = Schemas['EventTypeList']['items'][number];
export interface Family {
  name: string;
  types: EventType[];
}

/** Types grouped by family, families and types in name order. */
export function families(items: readonly EventType[]): Family[] {
  const byName = new Map<string, EventType[]>();
  for (const t of items) byName.set(t.family, [...(byName.get(t.family) ?? []), t]);
  return [...byName.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, types]) => ({ name, types: types.sort((a, b) => a.type.localeCompare(b.type)) }));
}

/** Whether a registration's `events` (types, `family.*`, `*`) cover a type: the service's rule. */
export function covers(patterns: readonly string[], t: EventType): boolean {
  return patterns.some((p) => p === '*' || p === t.type || p === `${t.family}.*`);
}

/**
 * The catalogue is the same for every collection and changes only with a new version of the
 * service: read once per page load (a failed read is tried again on the next use).
 */
let cached: Promise<EventType[]> | undefined;
export function useCatalogue(api: ServiceClient) {
  return useAsync(() => {
    cached ??= api.GET('/v1/webhooks/event-types').then(
      (list) => list.items,
      (error: unknown) => {
        cached = undefined;
        throw error;
      },
    );
    return cached;
  }, [api]);
}

export function CataloguePage({ api }: PageProps) {
  const catalogue = useCatalogue(api);
  const groups = catalogue.data ? families(catalogue.data) : [];
  return (
    <>
      <p>
        <A route="webhooks">← All registrations</A>
      </p>
      <h1>Event catalogue</h1>
      <p>
        Every event the service sends. Each delivery’s body is the envelope{' '}
        <code>{'{type, id, created_at, data}'}</code>; <code>data</code> is described below. A registration subscribes
        to a type, to a family with <code>family.*</code>, or to every type with <code>*</code>; its filters narrow by
        the ids each type is about (“filterable by”).
      </p>
      <ErrorNote error={catalogue.error} doing="read the event catalogue" />
      {catalogue.loading && !catalogue.data ? <Loading what="the event catalogue" /> : null}
      {catalogue.data && catalogue.data.length === 0 ? <Empty>The service lists no event type.</Empty> : null}
      {groups.map((f) => (
        <section key={f.name} aria-labelledby={`family-${f.name}`} data-family={f.name}>
          <h2 id={`family-${f.name}`}>
            {f.name}{' '}
            <span class="meta">
              ({f.types.length} type{f.types.length === 1 ? '' : 's'}; subscribe to all with <code>{f.name}.*</code>)
            </span>
          </h2>
          {f.types.map((t) => (
            <EventTypeEntry key={t.type} t={t} />
          ))}
        </section>
      ))}
    </>
  );
}

function EventTypeEntry({ t }: { t: EventType }) {
  const fields = fieldsOf(t.schema);
  return (
    <details class="event-type" data-event-type={t.type}>
      <summary>
        <code>{t.type}</code> <span class="description">{t.description}</span>
      </summary>
      <p class="meta">
        {t.filterable.length > 0 ? `Filterable by ${t.filterable.join(', ')}.` : 'No filter applies to it.'}
        {t.subscribable ? '' : ' Sent only on request (POST /v1/webhooks/{id}/test): not subscribable.'}
      </p>
      {fields.length > 0 ? (
        <DataTable
          caption={`Fields of ${t.type} data`}
          rows={fields}
          rowKey={(f) => f.name}
          columns={[
            { label: 'Field', value: (f) => <code>{f.name}</code> },
            { label: 'Type', value: (f) => f.type },
            { label: 'Required', value: (f) => (f.required ? 'yes' : 'no') },
            { label: 'Description', value: (f) => f.description },
          ]}
        />
      ) : null}
      <div class="two">
        <div>
          <h4>JSON Schema of data</h4>
          <pre class="json" data-schema={t.type}>
            {json(t.schema)}
          </pre>
        </div>
        <div>
          <h4>Example data</h4>
          <pre class="json" data-example={t.type}>
            {json(t.example)}
          </pre>
        </div>
      </div>
    </details>
  );
}

interface Field {
  name: string;
  type: string;
  required: boolean;
  description: string;
}

type JsonSchema = Record<string, unknown>;
const isSchema = (v: unknown): v is JsonSchema => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The top-level fields of an object schema, for reading at a glance (the JSON is next to it). */
function fieldsOf(schema: JsonSchema): Field[] {
  const props = isSchema(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  return Object.entries(props).map(([name, s]) => ({
    name,
    type: typeOf(s),
    required: required.has(name),
    description: isSchema(s) && typeof s.description === 'string' ? s.description : '',
  }));
}

/** A schema's type in a few characters: `string | null`, `string[]`, `"a" | "b"`, `object`. */
function typeOf(s: unknown): string {
  if (!isSchema(s)) return 'any';
  if ('const' in s) return JSON.stringify(s.const);
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  const union = (Array.isArray(s.anyOf) && s.anyOf) || (Array.isArray(s.oneOf) && s.oneOf);
  if (union) return union.map(typeOf).join(' | ');
  const t = s.type;
  if (Array.isArray(t)) return t.join(' | ');
  if (t === 'array') return `${typeOf(s.items)}[]`;
  if (typeof t === 'string') return typeof s.format === 'string' ? `${t} (${s.format})` : t;
  return 'any';
}
