/**
 * Jobs: the collection's background jobs, newest first, with their progress followed live
 * (polled every second while one is waiting or running), filters by state and task, cancel,
 * result and last error; and a form to enqueue one.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { DataTable, Empty, ErrorNote, json, Loading, useAsync, usePolling, when } from '../ui.tsx';

type Job = Schemas['Job'];
type JobStatus = Job['status'];
const STATES: JobStatus[] = ['queued', 'running', 'errored', 'completed', 'failed', 'cancelled'];
const ACTIVE = new Set<JobStatus>(['queued', 'running', 'errored']);
/** The tasks the API can enqueue today (an unknown one is refused with the list of known ones). */
const KNOWN_TASKS = ['records.import', 'cases.bulkStatus', 'interactions.export'];
const PAGE_SIZE = 20;

export default function JobsPage({ api, collectionId }: PageProps) {
  const [state, setState] = useState<JobStatus | ''>('');
  const [task, setTask] = useState('');
  const [taskFilter, setTaskFilter] = useState('');
  const [offset, setOffset] = useState(0);
  const path = { collectionId };
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

  const cancel = async (job: Job) => {
    setActionError(undefined);
    try {
      await api.POST('/admin/collection/{collectionId}/jobs/{jobId}/cancel', {
        params: { path: { collectionId, jobId: String(job.id) } },
      });
      jobs.reload(true);
    } catch (err) {
      setActionError(err);
    }
  };

  return (
    <>
      <h1>Jobs</h1>
      <Enqueue api={api} collectionId={collectionId} onEnqueued={() => (offset ? setOffset(0) : jobs.reload(true))} />
      <section aria-labelledby="jobs-list">
        <h2 id="jobs-list">Jobs</h2>
        <form
          class="inline"
          onSubmit={(e) => {
            e.preventDefault();
            setOffset(0);
            setTaskFilter(task.trim());
          }}
        >
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
            <input
              name="task"
              list="known-tasks"
              maxLength={100}
              value={task}
              onInput={(e) => setTask(e.currentTarget.value)}
            />
          </label>
          <button type="submit">Filter</button>
          <span class="meta" aria-live="polite">
            {live ? 'Following the running jobs (every second)…' : ''}
          </span>
        </form>
        <ErrorNote error={jobs.error} doing="list the jobs" />
        <ErrorNote error={actionError} doing="cancel the job" />
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
                {
                  label: 'Status',
                  value: (j) => (
                    <span class={`badge ${j.status}`} data-job-status={j.status}>
                      {j.status}
                    </span>
                  ),
                },
                { label: 'Progress', value: (j) => <Progress job={j} /> },
                { label: 'Attempts', value: (j) => `${j.attempts} of ${j.maxAttempts}` },
                { label: 'Created', value: (j) => when(j.createdAt) },
                { label: 'Finished', value: (j) => when(j.finishedAt) },
                { label: 'Details', value: (j) => <JobDetails job={j} onCancel={() => cancel(j)} /> },
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
      <datalist id="known-tasks">
        {KNOWN_TASKS.map((t) => (
          <option key={t} value={t} />
        ))}
      </datalist>
    </>
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

function JobDetails({ job, onCancel }: { job: Job; onCancel: () => void }) {
  const cancellable = job.status === 'queued' || job.status === 'errored';
  return (
    <>
      {cancellable ? (
        <button type="button" onClick={onCancel}>
          Cancel
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

function Enqueue({
  api,
  collectionId,
  onEnqueued,
}: {
  api: ServiceClient;
  collectionId: string;
  onEnqueued: () => void;
}) {
  const [task, setTask] = useState('records.import');
  const [payload, setPayload] = useState(
    '{\n  "appId": "desk",\n  "items": [{ "ref": "r1", "data": { "label": "First" } }]\n}',
  );
  const [error, setError] = useState<unknown>();
  const [queued, setQueued] = useState<string>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setQueued(undefined);
    let body: Record<string, unknown>;
    try {
      body = payload.trim() ? JSON.parse(payload) : {};
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('a JSON object is needed');
    } catch (err) {
      setError(new Error(`The payload is not a JSON object: ${err instanceof Error ? err.message : String(err)}`));
      return;
    }
    try {
      const job = await api.POST('/admin/collection/{collectionId}/async/jobs', {
        params: { path: { collectionId } },
        body: { task: task.trim(), payload: body },
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
      <form class="grid" onSubmit={submit}>
        <label>
          Task
          <input
            name="task"
            list="known-tasks"
            required
            maxLength={100}
            value={task}
            onInput={(e) => setTask(e.currentTarget.value)}
          />
        </label>
        <label class="wide">
          Payload (JSON)
          <textarea
            name="payload"
            rows={5}
            spellcheck={false}
            value={payload}
            onInput={(e) => setPayload(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Enqueue</button>
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
