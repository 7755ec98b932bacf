/**
 * Jobs: the collection's background jobs, newest first, with their progress followed live
 * (polled every second while one is waiting or running), filters by state and task, cancel,
 * retry (one job, or the failed ones of a task), result and last error; and a form to enqueue one.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { payloadObject, useTaskPayload } from '../task-payload.ts';
import { type Async, DataTable, Empty, ErrorNote, json, Loading, useAsync, usePolling, when } from '../ui.tsx';

type Job = Schemas['Job'];
type JobStatus = Job['status'];
const STATES: JobStatus[] = ['queued', 'running', 'errored', 'completed', 'failed', 'cancelled'];
const ACTIVE = new Set<JobStatus>(['queued', 'running', 'errored']);
const PAGE_SIZE = 20;

export default function JobsPage({ api, collectionId }: PageProps) {
  const [state, setState] = useState<JobStatus | ''>('');
  const [taskFilter, setTaskFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const path = { collectionId };
  // The tasks the service takes, each with its payload's schema and an example to start from.
  const tasks = useAsync(
    () => api.GET('/admin/collection/{collectionId}/job-tasks', { params: { path } }),
    [api, collectionId],
  );
  const jobs = useAsync(
    () =>
      api.GET('/admin/collection/{collectionId}/jobs', {
        params: {
          path,
          query: { state: state || undefined, task: taskFilter || undefined, limit: PAGE_SIZE, offset },
        },
      }),
    [api, collectionId, state, taskFilter, offset],
  );
  const live = jobs.data?.items.some((j) => ACTIVE.has(j.status)) ?? false;
  usePolling(live, 1000, () => jobs.reload(true));
  const [actionError, setActionError] = useState<unknown>();

  const [notice, setNotice] = useState<string>();
  /** Runs a change from a button, then shows the list again. */
  const act = async (change: () => Promise<string | undefined>) => {
    setActionError(undefined);
    setNotice(undefined);
    try {
      setNotice(await change());
      jobs.reload(true);
    } catch (err) {
      setActionError(err);
    }
  };
  const jobPath = (job: Job) => ({ params: { path: { collectionId, jobId: String(job.id) } } });
  const cancel = (job: Job) =>
    act(async () => {
      await api.POST('/admin/collection/{collectionId}/jobs/{jobId}/cancel', jobPath(job));
      return undefined;
    });
  const retry = (job: Job) =>
    act(async () => {
      await api.POST('/admin/collection/{collectionId}/jobs/{jobId}/retry', jobPath(job));
      return `Job ${job.id} is queued again.`;
    });
  // The failed jobs the task filter matches (every task's without one), 1,000 a click.
  const retryFailed = () =>
    act(async () => {
      const r = await api.POST('/admin/collection/{collectionId}/jobs/retry', {
        params: { path },
        body: { status: 'failed', task: taskFilter || undefined },
      });
      return `${r.retried} failed job${r.retried === 1 ? '' : 's'} queued again${r.more ? '; more remain: click again' : ''}.`;
    });

  return (
    <>
      <h1>Jobs</h1>
      <Enqueue
        api={api}
        collectionId={collectionId}
        tasks={tasks}
        onEnqueued={() => (offset ? setOffset(0) : jobs.reload(true))}
      />
      <section aria-labelledby="jobs-list">
        <h2 id="jobs-list">Jobs</h2>
        <form class="inline" onSubmit={(e) => e.preventDefault()}>
          <label>
            State
            <select
              name="state"
              value={state}
              onChange={(e) => {
                setOffset(0);
                setState(e.currentTarget.value as JobStatus | '');
              }}
            >
              <option value="">any</option>
              {STATES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
          </label>
          <label>
            Task
            <select
              name="task"
              value={taskFilter}
              onChange={(e) => {
                setOffset(0);
                setTaskFilter(e.currentTarget.value);
              }}
            >
              <option value="">any</option>
              {(tasks.data?.items ?? []).map((t) => (
                <option key={t.name} value={t.name}>
                  {t.name}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={retryFailed}>
            Retry failed{taskFilter ? ` ${taskFilter}` : ''} jobs
          </button>
          <span class="meta" aria-live="polite">
            {live ? 'Following the running jobs (every second)…' : ''}
          </span>
        </form>
        <ErrorNote error={jobs.error} doing="list the jobs" />
        <ErrorNote error={actionError} doing="change the job" />
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        {jobs.loading && !jobs.data ? <Loading what="jobs" /> : null}
        {jobs.data && jobs.data.items.length === 0 ? (
          <Empty>{state || taskFilter ? 'No job matches these filters.' : 'No jobs yet.'}</Empty>
        ) : null}
        {jobs.data && jobs.data.items.length > 0 ? (
          <>
            <DataTable<Job>
              caption="Jobs, newest first"
              class="jobs"
              rows={jobs.data.items}
              rowKey={(j) => j.id}
              columns={[
                { label: 'Id', value: (j) => j.id, numeric: true },
                { label: 'Task', value: (j) => j.task },
                { label: 'Status', value: (j) => <Status job={j} /> },
                { label: 'Progress', value: (j) => <Progress job={j} /> },
                { label: 'Attempts', value: (j) => `${j.attempts} of ${j.maxAttempts}` },
                { label: 'Created', value: (j) => when(j.createdAt) },
                {
                  // When a waiting job runs: its scheduled time, or its next retry.
                  label: 'Runs at',
                  value: (j) => (j.status === 'queued' || j.status === 'errored' ? when(j.runAt) : '—'),
                },
                { label: 'Finished', value: (j) => when(j.finishedAt) },
                {
                  label: 'Details',
                  value: (j) => <JobDetails job={j} onCancel={() => cancel(j)} onRetry={() => retry(j)} />,
                },
              ]}
            />
            <nav class="pager" aria-label="Pages of jobs">
              <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}>
                Newer
              </button>
              <button
                type="button"
                disabled={jobs.data.items.length < PAGE_SIZE}
                onClick={() => setOffset(offset + PAGE_SIZE)}
              >
                Older
              </button>
            </nav>
          </>
        ) : null}
      </section>
    </>
  );
}

/**
 * The items a completed job reports as failed: a `failed` count (records.import), else the
 * length of an `errors` list (which a task may cut short); 0 when it reports none.
 */
function failedItems(job: Job): number {
  const r = job.result as { errors?: unknown; failed?: unknown } | null | undefined;
  if (!r || typeof r !== 'object') return 0;
  if (typeof r.failed === 'number') return r.failed;
  return Array.isArray(r.errors) ? r.errors.length : 0;
}

/** The job's state; a completed job with failed items is shown as a warning, not a success. */
function Status({ job }: { job: Job }) {
  const failed = job.status === 'completed' ? failedItems(job) : 0;
  if (failed > 0) {
    return (
      <span class="badge partial" data-job-status={job.status}>
        completed, {failed} failed
      </span>
    );
  }
  return (
    <span class={`badge ${job.status}`} data-job-status={job.status}>
      {job.status}
    </span>
  );
}

function Progress({ job }: { job: Job }) {
  const p = job.progress;
  if (!p) return <span class="meta">{job.status === 'completed' ? 'done' : '—'}</span>;
  const text = p.total !== undefined ? `${p.done} / ${p.total}` : `${p.done}`;
  return (
    <span class="progress" data-progress={text}>
      {p.total ? <progress max={p.total} value={p.done} aria-label={`Job ${job.id}: ${text}`} /> : null}{' '}
      <span class="progress-text">{text}</span>
      {p.message ? <span class="meta"> {p.message}</span> : null}
    </span>
  );
}

function JobDetails({ job, onCancel, onRetry }: { job: Job; onCancel: () => void; onRetry: () => void }) {
  const cancellable = job.status === 'queued' || job.status === 'errored';
  const retryable = job.status === 'failed' || job.status === 'cancelled';
  return (
    <>
      {cancellable ? (
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      ) : null}
      {retryable ? (
        <button type="button" onClick={onRetry}>
          Retry
        </button>
      ) : null}
      {job.lastError ? (
        <p class="error-text">
          Last error: <span>{job.lastError}</span>
        </p>
      ) : null}
      <details>
        <summary>Result and payload</summary>
        <p class="meta">
          Run at {when(job.runAt)} · priority {job.priority}
          {job.queueName ? ` · queue ${job.queueName}` : ''}
          {job.key ? ` · key ${job.key}` : ''}
        </p>
        <h4>Result</h4>
        <pre class="json">{job.result === null || job.result === undefined ? 'none yet' : json(job.result)}</pre>
        <h4>Payload</h4>
        <pre class="json">{truncated(json(job.payload))}</pre>
      </details>
    </>
  );
}

/** A payload of 10,000 import items is megabytes of text: the page shows its start. */
const truncated = (text: string, max = 4000) =>
  text.length > max ? `${text.slice(0, max)}\n… (${text.length - max} more characters)` : text;

type JobTask = Schemas['JobTask'];

function Enqueue({
  api,
  collectionId,
  tasks,
  onEnqueued,
}: {
  api: ServiceClient;
  collectionId: string;
  tasks: Async<{ items: JobTask[] }>;
  onEnqueued: () => void;
}) {
  const { task, def, payload, edited, pick, type, backToExample } = useTaskPayload(tasks.data?.items);
  const [error, setError] = useState<unknown>();
  const [queued, setQueued] = useState<string>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setQueued(undefined);
    const body = payloadObject(payload);
    if (body instanceof Error) {
      setError(body);
      return;
    }
    try {
      const job = await api.POST('/admin/collection/{collectionId}/async/jobs', {
        params: { path: { collectionId } },
        body: { task, payload: body },
      });
      setQueued(`Job ${job.id} (${job.task}) is queued.`);
      onEnqueued();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="enqueue">
      <h2 id="enqueue">Enqueue a job</h2>
      <ErrorNote error={tasks.error} doing="list the tasks" />
      <form class="grid" onSubmit={submit}>
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
            {(tasks.data?.items ?? []).map((t) => (
              <option key={t.name} value={t.name}>
                {t.name}
              </option>
            ))}
          </select>
        </label>
        {def ? (
          <p class="meta wide task-description">
            {/* The description marks names as `code`, as the docs do. */}
            {def.description.split('`').map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part))}
          </p>
        ) : null}
        <label class="wide">
          Payload (JSON; the task’s example to start from)
          <textarea
            name="payload"
            rows={6}
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
            Enqueue
          </button>
          <button type="button" disabled={!def || !edited} onClick={backToExample}>
            Back to the example
          </button>
        </div>
      </form>
      <ErrorNote error={error} doing="enqueue the job" />
      {queued ? (
        <p class="notice" role="status">
          {queued}
        </p>
      ) : null}
    </section>
  );
}
