/**
 * Schedules: the collection's cron schedules, each with its next tick and its last run (the
 * job it enqueued, or why it enqueued nothing), followed every five seconds while one is
 * enabled; enabled or disabled, run now or deleted from its row; and a form to create one,
 * its task picked from the tasks the service takes (the service's and the app's own) with the
 * task's example as the payload to start from.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { payloadObject, useTaskPayload } from '../task-payload.ts';
import {
  type Async,
  ConfirmDelete,
  DataTable,
  Empty,
  ErrorNote,
  json,
  Loading,
  useAsync,
  usePolling,
  when,
  withCode,
} from '../ui.tsx';

type Schedule = Schemas['Schedule'];
type JobTask = Schemas['JobTask'];
type CatchUp = Schedule['catchUp'];

/** A few zones to pick from; any IANA name the service knows can be typed. */
const ZONES = [
  'UTC',
  'Europe/London',
  'Europe/Berlin',
  'Europe/Paris',
  'America/New_York',
  'America/Chicago',
  'America/Los_Angeles',
  'America/Sao_Paulo',
  'Asia/Kolkata',
  'Asia/Tokyo',
  'Australia/Sydney',
];

export default function SchedulesPage({ api, collectionId }: PageProps) {
  const path = { collectionId };
  const schedules = useAsync(
    () => api.GET('/admin/collection/{collectionId}/schedules', { params: { path } }),
    [api, collectionId],
  );
  const tasks = useAsync(
    () => api.GET('/admin/collection/{collectionId}/job-tasks', { params: { path } }),
    [api, collectionId],
  );
  const items = schedules.data?.items ?? [];
  const live = items.some((s) => s.enabled);
  usePolling(live, 5000, () => schedules.reload(true));

  const [actionError, setActionError] = useState<unknown>();
  const [notice, setNotice] = useState<string>();
  /** Runs a change from a row, then reads the list again. */
  const act = async (change: () => Promise<string>) => {
    setActionError(undefined);
    setNotice(undefined);
    try {
      setNotice(await change());
    } catch (err) {
      setActionError(err);
    }
    schedules.reload(true);
  };
  const params = (s: Schedule) => ({ params: { path: { collectionId, scheduleId: s.id } } });
  const toggle = (s: Schedule) =>
    act(async () => {
      const next = await api.PATCH('/admin/collection/{collectionId}/schedules/{scheduleId}', {
        ...params(s),
        body: { enabled: !s.enabled },
      });
      return next.enabled
        ? `Schedule ${next.name} is enabled: next run ${when(next.nextRunAt)}.`
        : `Schedule ${next.name} is disabled: it enqueues nothing until enabled.`;
    });
  const runNow = (s: Schedule) =>
    act(async () => {
      const job = await api.POST('/admin/collection/{collectionId}/schedules/{scheduleId}/run', params(s));
      return `Job ${job.id} is queued.`;
    });
  const remove = (s: Schedule) =>
    act(async () => {
      await api.DELETE('/admin/collection/{collectionId}/schedules/{scheduleId}', params(s));
      return `Schedule ${s.name} is deleted (the jobs it enqueued stay).`;
    });

  return (
    <>
      <h1>Schedules</h1>
      <p class="meta">
        A schedule enqueues one job of its task on every tick of its cron, read in its time zone; the jobs are listed on
        the Jobs page like any other. Times here are UTC.
      </p>
      <section aria-labelledby="schedules-list">
        <h2 id="schedules-list">Schedules</h2>
        <ErrorNote error={schedules.error} doing="list the schedules" />
        <ErrorNote error={actionError} doing="change the schedule" />
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        <p class="meta" aria-live="polite">
          {live ? 'Following the enabled schedules (every 5 s)…' : ''}
        </p>
        {schedules.loading && !schedules.data ? <Loading what="schedules" /> : null}
        {schedules.data && items.length === 0 ? <Empty>No schedules yet: create one below.</Empty> : null}
        {items.length > 0 ? (
          <DataTable<Schedule>
            caption="Schedules by name"
            class="schedules"
            rows={items}
            rowKey={(s) => s.id}
            columns={[
              { label: 'Name', value: (s) => s.name },
              {
                label: 'Cron',
                value: (s) => (
                  <span class="nowrap">
                    <code>{s.cron}</code> <span class="meta">{s.timezone}</span>
                  </span>
                ),
              },
              { label: 'Task', value: (s) => <code>{s.task}</code> },
              {
                label: 'State',
                value: (s) => (
                  <span
                    class={`badge ${s.enabled ? 'active' : 'paused'}`}
                    data-schedule-state={s.enabled ? 'enabled' : 'disabled'}
                  >
                    {s.enabled ? 'enabled' : 'disabled'}
                  </span>
                ),
              },
              {
                label: 'Next run',
                value: (s) => <span data-next-run={s.nextRunAt ?? ''}>{s.enabled ? when(s.nextRunAt) : '—'}</span>,
              },
              { label: 'Last run', value: (s) => when(s.lastRunAt) },
              {
                label: 'Last job',
                value: (s) => <span data-last-job={s.lastJobId ?? ''}>{s.lastJobId ?? '—'}</span>,
                numeric: true,
              },
              {
                label: 'Last error',
                value: (s) => (s.lastError ? <span class="error-text">{s.lastError}</span> : '—'),
              },
              {
                label: 'Actions',
                value: (s) => (
                  <span class="row-actions">
                    <button
                      type="button"
                      onClick={() => toggle(s)}
                      aria-label={`${s.enabled ? 'Disable' : 'Enable'} ${s.name}`}
                    >
                      {s.enabled ? 'Disable' : 'Enable'}
                    </button>
                    <button type="button" onClick={() => runNow(s)} aria-label={`Run ${s.name} now`}>
                      Run now
                    </button>
                    <ConfirmDelete what={s.name} onConfirm={() => remove(s)} />
                  </span>
                ),
              },
              {
                label: 'Details',
                value: (s) => (
                  <details>
                    <summary>Payload and settings</summary>
                    <p class="meta">
                      Catch-up {s.catchUp} · priority {s.priority} · attempts {s.maxAttempts ?? 'the task’s'}
                      {s.queueName ? ` · queue ${s.queueName}` : ''} · created {when(s.createdAt)}
                    </p>
                    <pre class="json">{json(s.payload)}</pre>
                  </details>
                ),
              },
            ]}
          />
        ) : null}
      </section>
      <CreateSchedule api={api} collectionId={collectionId} tasks={tasks} onCreated={() => schedules.reload(true)} />
    </>
  );
}

function CreateSchedule({
  api,
  collectionId,
  tasks,
  onCreated,
}: {
  api: ServiceClient;
  collectionId: string;
  tasks: Async<{ items: JobTask[] }>;
  onCreated: () => void;
}) {
  const [form, setForm] = useState<{ name: string; cron: string; timezone: string; catchUp: CatchUp }>({
    name: '',
    cron: '',
    timezone: 'UTC',
    catchUp: 'latest',
  });
  const all = tasks.data?.items ?? [];
  const { task, def, payload, edited, pick, type, backToExample } = useTaskPayload(all);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<string>();

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setCreated(undefined);
    const body = payloadObject(payload);
    if (body instanceof Error) {
      setError(body);
      return;
    }
    try {
      const s = await api.POST('/admin/collection/{collectionId}/schedules', {
        params: { path: { collectionId } },
        body: {
          name: form.name,
          cron: form.cron,
          timezone: form.timezone.trim() || 'UTC',
          task,
          payload: body,
          catchUp: form.catchUp,
        },
      });
      setCreated(`Schedule ${s.name} is created: next run ${when(s.nextRunAt)}.`);
      setForm({ ...form, name: '' });
      onCreated();
    } catch (err) {
      setError(err);
    }
  };

  const byKind = (source: 'service' | 'app') => all.filter((t) => (t.source ?? 'service') === source);
  return (
    <section aria-labelledby="new-schedule">
      <h2 id="new-schedule">New schedule</h2>
      <ErrorNote error={tasks.error} doing="list the tasks" />
      <form class="grid" onSubmit={submit}>
        <label>
          Name
          <input
            name="name"
            required
            maxLength={100}
            value={form.name}
            onInput={(e) => setForm({ ...form, name: e.currentTarget.value })}
          />
        </label>
        <label>
          Cron
          <input
            name="cron"
            required
            maxLength={200}
            spellcheck={false}
            placeholder="0 9 * * 1-5"
            aria-describedby="cron-hint"
            value={form.cron}
            onInput={(e) => setForm({ ...form, cron: e.currentTarget.value })}
          />
        </label>
        <label>
          Time zone
          <input
            name="timezone"
            list="time-zones"
            maxLength={64}
            spellcheck={false}
            value={form.timezone}
            onInput={(e) => setForm({ ...form, timezone: e.currentTarget.value })}
          />
          <datalist id="time-zones">
            {ZONES.map((z) => (
              <option key={z} value={z} />
            ))}
          </datalist>
        </label>
        <label>
          After downtime
          <select
            name="catchUp"
            value={form.catchUp}
            onChange={(e) => setForm({ ...form, catchUp: e.currentTarget.value as CatchUp })}
          >
            <option value="latest">latest: one job for the last missed tick</option>
            <option value="none">none: skip missed ticks</option>
          </select>
        </label>
        <p class="meta wide" id="cron-hint">
          Five fields: minute hour day-of-month month day-of-week, read in the time zone.{' '}
          <code class="nowrap">*/5 * * * *</code> every five minutes; <code class="nowrap">0 9 * * 1-5</code> weekdays
          at 9:00; <code class="nowrap">0 3 * * *</code> daily at 3:00; <code class="nowrap">0 0 1 * *</code> on the
          first of the month.
        </p>
        <label>
          Task
          <select
            name="task"
            required
            value={task}
            onChange={(e) => {
              pick(e.currentTarget.value);
            }}
          >
            <optgroup label="The service’s tasks">
              {byKind('service').map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
            </optgroup>
            {byKind('app').length > 0 ? (
              <optgroup label="The app’s tasks">
                {byKind('app').map((t) => (
                  <option key={t.name} value={t.name}>
                    {t.name}
                  </option>
                ))}
              </optgroup>
            ) : null}
          </select>
        </label>
        {def ? (
          <p class="meta wide task-description">
            {def.source === 'app' ? 'Run by the app’s own workers. ' : ''}
            {withCode(def.description)}
          </p>
        ) : null}
        <label class="wide">
          Payload (JSON; the task’s example to start from)
          <textarea
            name="payload"
            rows={5}
            spellcheck={false}
            value={payload}
            onInput={(e) => type(e.currentTarget.value)}
          />
        </label>
        {def ? (
          <details class="wide">
            <summary>The payload’s schema</summary>
            <pre class="json">{json(def.payloadSchema)}</pre>
          </details>
        ) : null}
        <div class="actions wide">
          <button type="submit" disabled={!task}>
            Create schedule
          </button>
          <button type="button" disabled={!def || !edited} onClick={backToExample}>
            Back to the example
          </button>
        </div>
      </form>
      <ErrorNote error={error} doing="create the schedule" />
      {created ? (
        <p class="notice" role="status">
          {created}
        </p>
      ) : null}
    </section>
  );
}
