/**
 * The people of a funnel's step (of one breakdown group, when picked from the breakdown):
 * those who entered it, converted or dropped off there, a page at a time in id order; each
 * opens onto their events in the period. **Export CSV** runs the `journeys.peopleExport` job
 * for the same selection, follows its progress and offers the file when it is done.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Schemas } from '../../../clients/typescript/src/index.ts';
import { DataTable, Empty, ErrorNote, Loading, saveBlob, useAsync, usePolling, when } from '../ui.tsx';
import { optionFields } from './funnel-options.tsx';
import { count, type FunnelScope, type FunnelStep, groupName } from './funnel-report.tsx';

/** A step, and a breakdown group (a value, or the other values together) when one was picked. */
export interface PeopleOf {
  stepId: string;
  group?: { value: string | null } | { other: true };
}
type Status = 'entered' | 'completed' | 'dropped';
const TABS: [Status, string][] = [
  ['entered', 'Entered'],
  ['completed', 'Converted'],
  ['dropped', 'Dropped off'],
];
const PAGE_SIZES = [5, 20, 100];

const groupFields = (of: PeopleOf) =>
  !of.group ? {} : 'other' in of.group ? { other: true } : { breakdownValue: of.group.value };

/** `steps`: the funnel's, or the group's when `of` names one (their counts label the tabs). */
export function People(props: FunnelScope & { of: PeopleOf; steps: FunnelStep[] }) {
  const { api, collectionId, journeyId, from, to, settings, of, steps } = props;
  const [stepId, setStepId] = useState(of.stepId);
  const [status, setStatus] = useState<Status>('entered');
  const [limit, setLimit] = useState(20);
  // The cursors of the pages seen, so Previous goes back without asking for a cursor backwards.
  const [cursors, setCursors] = useState<(string | undefined)[]>([undefined]);
  const [eventsOf, setEventsOf] = useState<string>();
  const cursor = cursors.at(-1);
  // Opened from a button far above (the steps' table, the breakdown): brought into view.
  const panel = useRef<HTMLElement>(null);
  useEffect(() => panel.current?.scrollIntoView({ block: 'start' }), []);
  const selection = {
    periodStart: from,
    periodEnd: to,
    ...optionFields(settings),
    stepId,
    status,
    ...groupFields(of),
  };
  const people = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/people', {
        params: { path: { collectionId, journeyId } },
        body: { ...selection, limit, cursor },
      }),
    [api, collectionId, journeyId, from, to, settings, stepId, status, limit, cursor],
  );
  const restart =
    <T,>(set: (v: T) => void) =>
    (v: T) => {
      set(v);
      setCursors([undefined]);
      setEventsOf(undefined);
    };
  const step = steps.find((s) => s.stepId === stepId);
  // The step's counts (the group's, when one was picked: `steps` are then the group's).
  const counts: Record<Status, number | undefined> = {
    entered: step?.enteredCount,
    completed: step?.completedCount,
    dropped: step ? step.enteredCount - step.completedCount : undefined,
  };
  const items = people.data?.items ?? [];
  return (
    <section class="people" aria-labelledby="people-title" ref={panel}>
      <h3 id="people-title">
        People of step {stepId}
        {of.group
          ? ` · ${groupName({ value: 'value' in of.group ? of.group.value : null, other: 'other' in of.group || undefined })}`
          : ''}
      </h3>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Step
          <select name="peopleStep" value={stepId} onChange={(e) => restart(setStepId)(e.currentTarget.value)}>
            {steps.map((s) => (
              <option key={s.stepId} value={s.stepId}>
                {s.stepId}
              </option>
            ))}
          </select>
        </label>
        <label>
          Per page
          <select name="perPage" value={limit} onChange={(e) => restart(setLimit)(Number(e.currentTarget.value))}>
            {PAGE_SIZES.map((n) => (
              <option key={n} value={n}>
                {n}
              </option>
            ))}
          </select>
        </label>
        <ExportButton {...props} selection={{ journeyId, ...selection }} />
      </form>
      <div class="tabs" role="tablist" aria-label="Which people">
        {TABS.map(([value, label]) => (
          <button
            key={value}
            type="button"
            role="tab"
            aria-selected={status === value}
            onClick={() => restart(setStatus)(value)}
          >
            {label}
            {counts[value] === undefined ? '' : ` (${count(counts[value])})`}
          </button>
        ))}
      </div>
      <div role="tabpanel" aria-label={TABS.find(([v]) => v === status)?.[1]}>
        <ErrorNote error={people.error} doing="list the people" />
        {people.loading && !people.data ? <Loading what="people" /> : null}
        {people.data && items.length === 0 && cursors.length === 1 ? <Empty>Nobody.</Empty> : null}
        {people.data && items.length > 0 ? (
          <ul class="ids" data-people={items.join(' ')}>
            {items.map((id) => (
              <li key={id}>
                <button
                  type="button"
                  class="disclosure"
                  aria-pressed={eventsOf === id}
                  aria-label={`Events of ${id}`}
                  onClick={() => setEventsOf(eventsOf === id ? undefined : id)}
                >
                  <code>{id}</code>
                </button>
              </li>
            ))}
          </ul>
        ) : null}
        <nav class="pager" aria-label="Pages of people">
          <button
            type="button"
            disabled={cursors.length === 1}
            onClick={() => {
              setCursors(cursors.slice(0, -1));
              setEventsOf(undefined);
            }}
          >
            Previous
          </button>
          <span class="meta">Page {cursors.length}</span>
          <button
            type="button"
            disabled={!people.data?.nextCursor}
            onClick={() => {
              setCursors([...cursors, people.data?.nextCursor ?? undefined]);
              setEventsOf(undefined);
            }}
          >
            Next
          </button>
        </nav>
      </div>
      {eventsOf ? <RecipientEvents key={eventsOf} {...props} recipientId={eventsOf} /> : null}
    </section>
  );
}

type EventRow = Schemas['InteractionEventRow'];

/** One recipient's events in the funnel's period, oldest first: what the funnel read of them. */
function RecipientEvents({
  api,
  collectionId,
  from,
  to,
  settings,
  recipientId,
}: FunnelScope & { recipientId: string }) {
  const events = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/interactions/query', {
        params: { path: { collectionId } },
        body: { [settings.idField]: recipientId, from, to, order: 'ASC', limit: 200 },
      }),
    [api, collectionId, from, to, settings.idField, recipientId],
  );
  return (
    <section class="recipient-events" aria-labelledby="events-title">
      <h4 id="events-title">
        Events of {recipientId} from {from} to {to} (included)
      </h4>
      <ErrorNote error={events.error} doing="read the recipient’s events" />
      {events.loading && !events.data ? <Loading what="events" /> : null}
      {events.data && events.data.length === 0 ? <Empty>No events in the period.</Empty> : null}
      {events.data && events.data.length > 0 ? (
        <DataTable<EventRow>
          caption={`Events of ${recipientId}${events.data.length === 200 ? ' (the first 200)' : ''}`}
          rows={events.data}
          rowKey={(e) => e.eventId}
          columns={[
            { label: 'Time', value: (e) => when(e.timestamp) },
            { label: 'Interaction', value: (e) => e.interactionId },
            { label: 'Outcome', value: (e) => e.outcome ?? '—' },
            { label: 'App', value: (e) => e.appId ?? '—' },
            { label: 'Journey', value: (e) => e.journeyId ?? '—' },
            {
              label: 'Metadata',
              value: (e) =>
                e.metadata && Object.keys(e.metadata).length ? <code>{JSON.stringify(e.metadata)}</code> : '—',
            },
          ]}
        />
      ) : null}
    </section>
  );
}

type Job = Schemas['Job'];
const DONE: Job['status'][] = ['completed', 'failed', 'cancelled'];

/** Starts the export job for the people selected and follows it to its file. */
function ExportButton({ api, collectionId, selection }: FunnelScope & { selection: Record<string, unknown> }) {
  const [jobId, setJobId] = useState<number>();
  const [job, setJob] = useState<Job>();
  const [error, setError] = useState<unknown>();
  const running = jobId !== undefined && (job === undefined || !DONE.includes(job.status));
  const read = (id: number) =>
    api
      .GET('/admin/collection/{collectionId}/jobs/{jobId}', { params: { path: { collectionId, jobId: String(id) } } })
      .then(setJob, setError);
  usePolling(running, 1000, () => jobId !== undefined && read(jobId));
  const start = async () => {
    setError(undefined);
    setJob(undefined);
    try {
      const queued = await api.POST('/admin/collection/{collectionId}/async/jobs', {
        params: { path: { collectionId } },
        body: { task: 'journeys.peopleExport', payload: selection },
      });
      setJobId(queued.id);
      await read(queued.id);
    } catch (err) {
      setError(err);
    }
  };
  const download = async (id: number) => {
    setError(undefined);
    try {
      const file = await api.GET('/admin/collection/{collectionId}/funnels/exports/{jobId}/download', {
        params: { path: { collectionId, jobId: id } },
        parseAs: 'blob',
      });
      saveBlob(file as unknown as Blob, `funnel-people-${collectionId}-${id}.csv`);
    } catch (err) {
      setError(err);
    }
  };
  const progress = job?.progress;
  return (
    <div class="export" aria-live="polite">
      <button type="button" onClick={start} disabled={running}>
        Export CSV
      </button>
      {jobId !== undefined && !job ? <span class="meta"> Job {jobId} queued</span> : null}
      {job ? (
        <span class="meta" data-export-status={job.status}>
          {' '}
          Job {job.id}: <span class={`badge ${job.status}`}>{job.status}</span>
          {progress
            ? ` ${count(progress.done)}${progress.total === undefined ? '' : ` / ${count(progress.total)}`} rows`
            : ''}
          {job.status === 'failed' ? ` (${job.lastError ?? 'no reason given'})` : ''}
        </span>
      ) : null}
      {job?.status === 'completed' ? (
        <button type="button" onClick={() => download(job.id)}>
          Download CSV
        </button>
      ) : null}
      <ErrorNote error={error} doing="export the people" />
    </div>
  );
}
