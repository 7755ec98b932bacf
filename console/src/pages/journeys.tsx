/**
 * Journeys: pick a journey and a window; its funnel as a chart (entered, and of them
 * completed, per step) and a table (conversion per step and from the first, time to
 * complete); the recipients of a step.
 */
import { useMemo, useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import { Chart, COLORS } from '../chart.tsx';
import type { PageProps } from '../main.tsx';
import {
  DataTable,
  DayRangeFields,
  daysAgo,
  duration,
  Empty,
  ErrorNote,
  Figure,
  Loading,
  percent,
  useAsync,
} from '../ui.tsx';

type FunnelStep = Schemas['JourneyFunnelReportResponse']['steps'][number];

/** Ids with numbers in them, compared by the numbers' values. */
const NATURAL = new Intl.Collator('en', { numeric: true });

export default function JourneysPage({ api, collectionId }: PageProps) {
  const path = { collectionId };
  const journeys = useAsync(
    () => api.GET('/admin/collection/{collectionId}/journeys', { params: { path, query: { limit: 100 } } }),
    [api, collectionId],
  );
  const [picked, setPicked] = useState('');
  const [from, setFrom] = useState(daysAgo(30));
  const [to, setTo] = useState(daysAgo(0));
  const [window, setWindow] = useState({ from: daysAgo(30), to: daysAgo(0) });
  const journeyId = picked || journeys.data?.items[0]?.id || '';
  const journey = journeys.data?.items.find((j) => j.id === journeyId);

  return (
    <>
      <h1>Journeys</h1>
      <ErrorNote error={journeys.error} doing="list the journeys" />
      {journeys.loading && !journeys.data ? <Loading what="journeys" /> : null}
      {journeys.data && journeys.data.items.length === 0 ? (
        <Empty>
          No journeys yet. A journey is created with <code>POST /admin/collection/{collectionId}/journeys</code>; its
          funnel is then counted from interaction events (docs/journeys.md).
        </Empty>
      ) : null}
      {journeys.data && journeys.data.items.length > 0 ? (
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            setWindow({ from, to });
          }}
        >
          <label>
            Journey
            <select name="journey" value={journeyId} onChange={(e) => setPicked(e.currentTarget.value)}>
              {journeys.data.items.map((j) => (
                <option key={j.id} value={j.id}>
                  {j.name}
                  {j.active ? '' : ' (inactive)'}
                </option>
              ))}
            </select>
          </label>
          <DayRangeFields from={from} to={to} onFrom={setFrom} onTo={setTo} />
          <button type="submit">Show</button>
        </form>
      ) : null}
      {journey ? (
        <Funnel
          key={`${journey.id} ${window.from} ${window.to}`}
          api={api}
          collectionId={collectionId}
          journeyId={journey.id}
          name={journey.name}
          from={window.from}
          to={window.to}
        />
      ) : null}
    </>
  );
}

function Funnel({
  api,
  collectionId,
  journeyId,
  name,
  from,
  to,
}: {
  api: ServiceClient;
  collectionId: string;
  journeyId: string;
  name: string;
  from: string;
  to: string;
}) {
  const path = { collectionId, journeyId };
  const report = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/funnel-report', {
        params: { path },
        // [] counts the journey's own steps and mappings (data.steps).
        body: { stepMappings: [], periodStart: from, periodEnd: to },
      }),
    [api, collectionId, journeyId, from, to],
  );
  const [recipientsOf, setRecipientsOf] = useState<string>();
  const steps = report.data?.steps ?? [];
  const spec = useMemo(
    () => ({
      kind: 'category' as const,
      labels: steps.map((s) => s.stepId),
      xLabel: 'Step',
      series: [
        { label: 'Entered', values: steps.map((s) => s.enteredCount), color: COLORS.muted, width: 0.7 },
        { label: 'Completed', values: steps.map((s) => s.completedCount), color: COLORS.secondary, width: 0.45 },
      ],
    }),
    [report.data],
  );
  const first = steps[0]?.enteredCount ?? 0;
  const last = steps.at(-1)?.completedCount ?? 0;
  return (
    <section aria-labelledby="funnel-title">
      <h2 id="funnel-title">Funnel of {name}</h2>
      <ErrorNote error={report.error} doing="count the funnel" />
      {report.loading && !report.data ? <Loading what="the funnel" /> : null}
      {report.data && steps.length === 0 ? <Empty>This journey has no steps to count.</Empty> : null}
      {report.data && steps.length > 0 ? (
        <>
          <p class="total">
            <strong>{first}</strong> entered from {from} to {to} (included); <strong>{last}</strong> completed the last
            step: {percent(first ? last / first : 0)} overall.
          </p>
          <Figure
            title="Entered and completed per step"
            chart={
              <Chart
                spec={spec}
                label={`Funnel: ${steps.map((s) => `${s.stepId} ${s.enteredCount} entered, ${s.completedCount} completed`).join('; ')}`}
              />
            }
            table={<FunnelTable steps={steps} first={first} onRecipients={setRecipientsOf} />}
          />
          <FunnelTable steps={steps} first={first} onRecipients={setRecipientsOf} caption="Steps" />
          {recipientsOf ? (
            <Recipients
              key={recipientsOf}
              api={api}
              collectionId={collectionId}
              journeyId={journeyId}
              stepId={recipientsOf}
              from={from}
              to={to}
            />
          ) : null}
        </>
      ) : null}
    </section>
  );
}

function FunnelTable({
  steps,
  first,
  onRecipients,
  caption = 'Funnel steps',
}: {
  steps: FunnelStep[];
  first: number;
  onRecipients: (stepId: string) => void;
  caption?: string;
}) {
  return (
    <DataTable<FunnelStep>
      caption={caption}
      class="funnel"
      rows={steps}
      rowKey={(s) => s.stepId}
      columns={[
        { label: 'Step', value: (s) => s.stepId },
        { label: 'Completes on', value: (s) => `${s.interactionId} · ${s.outcome}` },
        { label: 'Entered', value: (s) => s.enteredCount, numeric: true },
        { label: 'Completed', value: (s) => s.completedCount, numeric: true },
        { label: 'Conversion', value: (s) => percent(s.conversionRate), numeric: true },
        { label: 'Of all who entered', value: (s) => percent(first ? s.completedCount / first : 0), numeric: true },
        { label: 'Average time to complete', value: (s) => duration(s.avgTimeToComplete), numeric: true },
        {
          label: 'Recipients',
          value: (s) => (
            <button type="button" onClick={() => onRecipients(s.stepId)}>
              Recipients of {s.stepId}
            </button>
          ),
        },
      ]}
    />
  );
}

function Recipients({
  api,
  collectionId,
  journeyId,
  stepId,
  from,
  to,
}: {
  api: ServiceClient;
  collectionId: string;
  journeyId: string;
  stepId: string;
  from: string;
  to: string;
}) {
  const [status, setStatus] = useState<'completed' | 'pending' | 'entered'>('completed');
  const ids = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/steps/{stepId}/recipients', {
        params: { path: { collectionId, journeyId, stepId } },
        body: { status, from, to, limit: 1000 },
      }),
    [api, collectionId, journeyId, stepId, status, from, to],
  );
  // Shown in natural order (user-2 before user-10); the service answers them in text order.
  const shown = useMemo(() => (ids.data ? [...ids.data].sort(NATURAL.compare) : undefined), [ids.data]);
  return (
    <section class="recipients" aria-labelledby="recipients-title">
      <h3 id="recipients-title">Recipients of step {stepId}</h3>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Who
          <select
            name="recipientStatus"
            value={status}
            onChange={(e) => setStatus(e.currentTarget.value as typeof status)}
          >
            <option value="completed">completed it</option>
            <option value="pending">entered, not completed</option>
            <option value="entered">entered it</option>
          </select>
        </label>
      </form>
      <ErrorNote error={ids.error} doing="list the recipients" />
      {ids.loading && !ids.data ? <Loading what="recipients" /> : null}
      {ids.data && ids.data.length === 0 ? <Empty>Nobody.</Empty> : null}
      {ids.data && ids.data.length > 0 ? (
        <>
          <p>
            {ids.data.length}
            {ids.data.length === 1000 ? ' (the first 1000)' : ''} recipient{ids.data.length === 1 ? '' : 's'}:
          </p>
          <ul class="ids" data-recipients={shown?.join(' ')}>
            {shown?.map((id) => (
              <li key={id}>
                <code>{id}</code>
              </li>
            ))}
          </ul>
        </>
      ) : null}
    </section>
  );
}
