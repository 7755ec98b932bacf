/**
 * A registration's form, for creating one and for changing it: the receiver, the events it
 * subscribes to (chosen from the catalogue: a type, a family `family.*`, or `*`) and the
 * filters that narrow them (app, link, interaction and journey ids, comma-separated).
 */
import { useState } from 'preact/hooks';
import type { Schemas } from '../../../clients/typescript/src/index.ts';
import { ErrorNote, Loading } from '../ui.tsx';
import { covers, type EventType, families } from './webhook-catalogue.tsx';

type Filters = Schemas['WebhookFilters'];
type FilterKey = keyof Filters;
const FILTERS: { key: FilterKey; label: string; about: string }[] = [
  { key: 'appIds', label: 'App ids', about: 'apps' },
  { key: 'linkIds', label: 'Link ids', about: 'links' },
  { key: 'interactionIds', label: 'Interaction ids', about: 'interactions' },
  { key: 'journeyIds', label: 'Journey ids', about: 'journeys' },
];

export interface WebhookFormValues {
  url: string;
  events: string[];
  /** null: no filter (create omits it; a change removes the registration's). */
  filters: Filters | null;
  description: string;
}

/** `a, b,,c ` → `['a', 'b', 'c']`, each once. */
const idsOf = (text: string) => [...new Set(text.split(',').map((s) => s.trim()))].filter(Boolean);

export function WebhookForm({
  catalogue,
  catalogueError,
  initial,
  submitLabel,
  doing,
  onSubmit,
}: {
  catalogue: EventType[] | undefined;
  catalogueError: unknown;
  initial?: WebhookFormValues;
  submitLabel: string;
  /** What the submit does, in words, for its error ("register the receiver"). */
  doing: string;
  /** Resolves when done; a rejection is shown under the form. */
  onSubmit: (values: WebhookFormValues) => Promise<void>;
}) {
  const [url, setUrl] = useState(initial?.url ?? '');
  const [events, setEvents] = useState<string[]>(initial?.events ?? []);
  const [filters, setFilters] = useState<Record<FilterKey, string>>(() => ({
    appIds: initial?.filters?.appIds?.join(', ') ?? '',
    linkIds: initial?.filters?.linkIds?.join(', ') ?? '',
    interactionIds: initial?.filters?.interactionIds?.join(', ') ?? '',
    journeyIds: initial?.filters?.journeyIds?.join(', ') ?? '',
  }));
  const [description, setDescription] = useState(initial?.description ?? '');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);

  const parsed: Filters = {};
  for (const f of FILTERS) {
    const ids = idsOf(filters[f.key]);
    if (ids.length > 0) parsed[f.key] = ids;
  }
  // A filter drops every event that is not about one of its ids: say which chosen types that
  // silences, before the receiver finds out by their absence.
  const chosen = (catalogue ?? []).filter((t) => t.subscribable && covers(events, t));
  const silenced = FILTERS.filter((f) => parsed[f.key]).map((f) => ({
    ...f,
    types: chosen.filter((t) => !t.filterable.includes(f.key)).map((t) => t.type),
  }));

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    if (events.length === 0) {
      setError(new Error('Choose at least one event (a type, a family or every event).'));
      return;
    }
    setBusy(true);
    try {
      await onSubmit({
        url: url.trim(),
        events,
        filters: Object.keys(parsed).length > 0 ? parsed : null,
        description: description.trim(),
      });
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };

  return (
    <>
      <form class="grid" onSubmit={submit}>
        <label>
          Receiver address
          <input
            name="url"
            type="url"
            required
            maxLength={2000}
            placeholder="https://receiver.example/hooks"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </label>
        <label>
          Description (optional)
          <input
            name="description"
            maxLength={500}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </label>
        <fieldset class="wide events">
          <legend>Events</legend>
          {catalogue ? (
            <EventPicker
              catalogue={catalogue}
              value={events}
              onChange={(next) => {
                setEvents(next);
                setError(undefined);
              }}
            />
          ) : catalogueError ? (
            <ErrorNote error={catalogueError} doing="read the event catalogue" />
          ) : (
            <Loading what="the event types" />
          )}
        </fieldset>
        <fieldset class="wide filters">
          <legend>Filters (optional): only events about these ids</legend>
          {FILTERS.map((f) => (
            <label key={f.key}>
              {f.label}
              <input
                name={f.key}
                placeholder="comma-separated"
                value={filters[f.key]}
                onInput={(e) => setFilters({ ...filters, [f.key]: e.currentTarget.value })}
              />
            </label>
          ))}
          {silenced
            .filter((s) => s.types.length > 0)
            .map((s) => (
              <p key={s.key} class="meta wide" data-silenced={s.key}>
                With {s.label.toLowerCase()} set, these chosen types are never sent (they are not about {s.about}):{' '}
                {s.types.join(', ')}.
              </p>
            ))}
        </fieldset>
        <button type="submit" disabled={busy}>
          {submitLabel}
        </button>
      </form>
      <ErrorNote error={error} doing={doing} />
    </>
  );
}

/**
 * Checkboxes from the catalogue: `*`, then per family `family.*` and its types. A type covered
 * by a chosen wildcard is shown checked and cannot be unchecked on its own; choosing a
 * wildcard drops the entries it covers, so what is sent is the shortest list.
 */
function EventPicker({
  catalogue,
  value,
  onChange,
}: {
  catalogue: EventType[];
  value: string[];
  onChange: (events: string[]) => void;
}) {
  const groups = families(catalogue.filter((t) => t.subscribable));
  const known = new Set(['*', ...groups.flatMap((f) => [`${f.name}.*`, ...f.types.map((t) => t.type)])]);
  // Entries the catalogue no longer lists (a type removed since the registration was made):
  // kept and shown, so a change does not drop them silently.
  const unknown = value.filter((v) => !known.has(v));
  const all = value.includes('*');
  const toggle = (pattern: string, on: boolean, drop: (v: string) => boolean = () => false) =>
    onChange(on ? [...value.filter((v) => !drop(v)), pattern] : value.filter((v) => v !== pattern));
  return (
    <>
      <label class="check every">
        <input
          type="checkbox"
          name="events"
          value="*"
          checked={all}
          onChange={(e) => toggle('*', e.currentTarget.checked, () => true)}
        />
        * (every event, and those added later)
      </label>
      <div class="families">
        {groups.map((f) => {
          const family = `${f.name}.*`;
          const wholeFamily = all || value.includes(family);
          return (
            <div key={f.name} class="family" data-family={f.name}>
              <label class="check family-all">
                <input
                  type="checkbox"
                  name="events"
                  value={family}
                  checked={wholeFamily}
                  disabled={all}
                  onChange={(e) => toggle(family, e.currentTarget.checked, (v) => f.types.some((t) => t.type === v))}
                />
                {family}
              </label>
              {f.types.map((t) => (
                <label key={t.type} class="check" title={t.description}>
                  <input
                    type="checkbox"
                    name="events"
                    value={t.type}
                    checked={wholeFamily || value.includes(t.type)}
                    disabled={wholeFamily}
                    onChange={(e) => toggle(t.type, e.currentTarget.checked)}
                  />
                  {t.type}
                </label>
              ))}
            </div>
          );
        })}
        {unknown.length > 0 ? (
          <div class="family">
            <span class="meta">Not in the catalogue</span>
            {unknown.map((v) => (
              <label key={v} class="check">
                <input type="checkbox" name="events" value={v} checked onChange={() => toggle(v, false)} />
                {v}
              </label>
            ))}
          </div>
        ) : null}
      </div>
    </>
  );
}
