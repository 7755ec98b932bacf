/**
 * Cases: for one app, how many cases were opened in a period, by status and by priority,
 * and week by week (the app's case summary).
 */
import { useMemo, useState } from 'preact/hooks';
import { Chart, COLORS } from '../chart.tsx';
import type { PageProps } from '../main.tsx';
import { DataTable, DayRangeFields, daysAgo, Empty, ErrorNote, Figure, Loading, useAsync } from '../ui.tsx';

const APP_KEY = 'console.casesApp';

/** Statuses by count; priorities by number, `none` (no priority) last. */
const byCount = (counts: Record<string, number>) =>
  Object.entries(counts).sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1));
const byPriority = (counts: Record<string, number>) =>
  Object.entries(counts).sort(([a], [b]) => (a === 'none' ? 1 : b === 'none' ? -1 : Number(a) - Number(b)));

/** The Monday 00:00 UTC of the ISO week holding a date, in seconds. */
function mondayOf(date: string): number {
  const d = new Date(`${date}T00:00:00Z`);
  return d.getTime() / 1000 - ((d.getUTCDay() + 6) % 7) * 86_400;
}

export default function CasesPage({ api, collectionId }: PageProps) {
  const [appId, setAppId] = useState(() => sessionStorage.getItem(APP_KEY) ?? '');
  const [from, setFrom] = useState(daysAgo(90));
  const [to, setTo] = useState(daysAgo(0));
  // The apps that hold cases, offered as the app id is typed.
  const apps = useAsync(
    () => api.GET('/admin/collection/{collectionId}/case-apps', { params: { path: { collectionId } } }),
    [api, collectionId],
  );
  const [query, setQuery] = useState(() => (appId ? { appId, from, to } : undefined));
  const summary = useAsync(
    () =>
      query
        ? api.POST('/{zone}/collection/{collectionId}/app/{appId}/cases/summary', {
            params: { path: { zone: 'admin', collectionId, appId: query.appId } },
            body: { period: { from: query.from, to: query.to } },
          })
        : Promise.resolve(undefined),
    [api, collectionId, query],
  );
  const s = summary.data;
  const status = useMemo(() => (s ? byCount(s.byStatus) : []), [s]);
  const priority = useMemo(() => (s ? byPriority(s.byPriority) : []), [s]);
  const specs = useMemo(
    () =>
      s && {
        status: {
          kind: 'category' as const,
          labels: status.map(([k]) => k),
          xLabel: 'Status',
          series: [{ label: 'Cases', values: status.map(([, n]) => n), color: COLORS.primary }],
        },
        priority: {
          kind: 'category' as const,
          labels: priority.map(([k]) => k),
          xLabel: 'Priority',
          series: [{ label: 'Cases', values: priority.map(([, n]) => n), color: COLORS.secondary }],
        },
        trend: {
          kind: 'time' as const,
          x: s.trend.map((w) => Date.parse(w.start) / 1000),
          stepSeconds: 7 * 86_400,
          // The weeks of the period asked for, whole: from the Monday of its first to the end of its last.
          window: [mondayOf(query!.from), mondayOf(query!.to) + 7 * 86_400] as [number, number],
          series: [{ label: 'Cases opened', values: s.trend.map((w) => w.count), color: COLORS.primary }],
        },
      },
    [s, status, priority, query],
  );
  return (
    <>
      <h1>Cases</h1>
      <form
        class="inline"
        onSubmit={(e) => {
          e.preventDefault();
          const id = appId.trim();
          sessionStorage.setItem(APP_KEY, id);
          setQuery({ appId: id, from, to });
        }}
      >
        <label>
          App id
          <input
            name="appId"
            required
            maxLength={64}
            placeholder="e.g. desk"
            list="case-apps"
            value={appId}
            onInput={(e) => setAppId(e.currentTarget.value)}
          />
          <datalist id="case-apps">
            {(apps.data?.items ?? []).map((a) => (
              <option key={a.appId} value={a.appId} />
            ))}
          </datalist>
        </label>
        <DayRangeFields from={from} to={to} onFrom={setFrom} onTo={setTo} />
        <button type="submit">Show</button>
      </form>
      {!query ? (
        <Empty>
          {apps.data && apps.data.items.length > 0
            ? `Pick an app to see its cases: ${apps.data.items.map((a) => a.appId).join(', ')}.`
            : apps.data
              ? 'No app of this collection holds cases yet.'
              : 'Name an app to see its cases.'}
        </Empty>
      ) : null}
      <ErrorNote error={summary.error} doing="summarise the cases" />
      {query && summary.loading && !s ? <Loading what="the case summary" /> : null}
      {query && s && s.total === 0 ? (
        <Empty>
          No cases of app <code>{query.appId}</code> were opened from {query.from} to {query.to}.
        </Empty>
      ) : null}
      {query && s && specs && s.total > 0 ? (
        <>
          <p class="total">
            <strong data-total-cases={s.total}>{s.total}</strong> cases of app <code>{query.appId}</code> opened from{' '}
            {query.from} to {query.to} (included).
          </p>
          <div class="two">
            <Figure
              title="By status"
              chart={
                <Chart
                  spec={specs.status}
                  label={`Cases by status: ${status.map(([k, n]) => `${k} ${n}`).join(', ')}`}
                />
              }
              table={<CountTable caption="Cases by status" label="Status" rows={status} />}
            />
            <Figure
              title="By priority"
              chart={
                <Chart
                  spec={specs.priority}
                  label={`Cases by priority: ${priority.map(([k, n]) => `${k} ${n}`).join(', ')}`}
                />
              }
              table={<CountTable caption="Cases by priority" label="Priority" rows={priority} />}
            />
          </div>
          <Figure
            title="Opened per week"
            chart={<Chart spec={specs.trend} label={`Cases opened per week, ${s.trend.length} weeks with cases`} />}
            table={
              <DataTable
                caption="Cases opened per ISO week (weeks without any left out)"
                rows={s.trend}
                rowKey={(w) => w.week}
                columns={[
                  { label: 'Week', value: (w) => w.week },
                  { label: 'Starts', value: (w) => w.start.slice(0, 10) },
                  { label: 'Cases', value: (w) => w.count, numeric: true },
                ]}
              />
            }
          />
        </>
      ) : null}
    </>
  );
}

function CountTable({ caption, label, rows }: { caption: string; label: string; rows: [string, number][] }) {
  return (
    <DataTable
      caption={caption}
      rows={rows}
      rowKey={([k]) => k}
      columns={[
        { label, value: ([k]) => k },
        { label: 'Cases', value: ([, n]) => n, numeric: true },
      ]}
    />
  );
}
