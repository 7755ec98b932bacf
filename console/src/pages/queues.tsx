/**
 * Queues: the collection's named queues with their depth (pending, due, running), throughput
 * (jobs finished in the last minute) and flow control, followed live (every two seconds); a
 * queue is paused or resumed from its row, and its concurrency and rate set in a form that
 * also sets up a queue before its first job.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { DataTable, Empty, ErrorNote, Loading, useAsync, usePolling, when } from '../ui.tsx';

type Queue = Schemas['Queue'];

export default function QueuesPage({ api, collectionId }: PageProps) {
  const path = { collectionId };
  const queues = useAsync(
    () => api.GET('/admin/collection/{collectionId}/queues', { params: { path, query: { limit: 100 } } }),
    [api, collectionId],
  );
  usePolling(true, 2000, () => queues.reload(true));
  const [actionError, setActionError] = useState<unknown>();
  const [editing, setEditing] = useState<string>();

  const toggle = async (q: Queue) => {
    setActionError(undefined);
    try {
      const params = { path: { collectionId, queueName: q.name } };
      if (q.paused) await api.POST('/admin/collection/{collectionId}/queues/{queueName}/resume', { params });
      else await api.POST('/admin/collection/{collectionId}/queues/{queueName}/pause', { params });
      queues.reload(true);
    } catch (err) {
      setActionError(err);
    }
  };

  const items = queues.data?.items ?? [];
  return (
    <>
      <h1>Queues</h1>
      <p class="meta">
        Jobs enqueued with a <code>queueName</code> run in enqueue order, as many at a time as the queue’s concurrency
        allows (one by default) and no faster than its rate. A queue is listed while it has unfinished jobs or settings
        of its own.
      </p>
      <section aria-labelledby="queues-list">
        <h2 id="queues-list">Queues</h2>
        <ErrorNote error={queues.error} doing="list the queues" />
        <ErrorNote error={actionError} doing="change the queue" />
        {queues.loading && !queues.data ? <Loading what="queues" /> : null}
        {queues.data && items.length === 0 ? (
          <Empty>No queues yet: enqueue a job with a queueName, or set one up below.</Empty>
        ) : null}
        {items.length > 0 ? (
          <DataTable<Queue>
            caption="Queues by name"
            class="queues"
            rows={items}
            rowKey={(q) => q.name}
            columns={[
              { label: 'Queue', value: (q) => <code>{q.name}</code> },
              {
                label: 'State',
                value: (q) => (
                  <span
                    class={`badge ${q.paused ? 'paused' : 'active'}`}
                    data-queue-state={q.paused ? 'paused' : 'running'}
                  >
                    {q.paused ? 'paused' : 'running'}
                  </span>
                ),
              },
              { label: 'Pending', value: (q) => q.pending, numeric: true },
              { label: 'Due', value: (q) => q.due, numeric: true },
              { label: 'Running', value: (q) => q.running, numeric: true },
              { label: 'Finished / min', value: (q) => q.finishedLastMinute, numeric: true },
              { label: 'Failed / min', value: (q) => q.failedLastMinute, numeric: true },
              { label: 'Oldest pending', value: (q) => when(q.oldestPendingAt) },
              { label: 'At once', value: (q) => q.concurrency, numeric: true },
              { label: 'Rate', value: (q) => (q.ratePerSecond === null ? 'no limit' : `${q.ratePerSecond} / s`) },
              {
                label: 'Actions',
                value: (q) => (
                  <span class="row-actions">
                    <button
                      type="button"
                      onClick={() => toggle(q)}
                      aria-label={`${q.paused ? 'Resume' : 'Pause'} ${q.name}`}
                    >
                      {q.paused ? 'Resume' : 'Pause'}
                    </button>
                    <button type="button" onClick={() => setEditing(q.name)} aria-label={`Settings of ${q.name}`}>
                      Settings
                    </button>
                  </span>
                ),
              },
            ]}
          />
        ) : null}
      </section>
      <QueueSettings
        api={api}
        collectionId={collectionId}
        name={editing}
        current={items.find((q) => q.name === editing)}
        onSaved={() => queues.reload(true)}
      />
    </>
  );
}

/** Concurrency and rate of a queue (picked from the table, or a new name). */
function QueueSettings({
  api,
  collectionId,
  name,
  current,
  onSaved,
}: {
  api: ServiceClient;
  collectionId: string;
  name: string | undefined;
  current: Queue | undefined;
  onSaved: () => void;
}) {
  // Typed values; undefined until typed (then the picked queue's own are shown).
  const [typed, setTyped] = useState<{ name?: string; concurrency?: string; rate?: string }>({});
  const [shownFor, setShownFor] = useState(name);
  if (shownFor !== name) {
    setShownFor(name);
    setTyped({});
  }
  const queueName = typed.name ?? name ?? '';
  const concurrency = typed.concurrency ?? String(current?.concurrency ?? 1);
  const rate = typed.rate ?? (current?.ratePerSecond == null ? '' : String(current.ratePerSecond));
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState<string>();

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setSaved(undefined);
    try {
      const q = await api.PATCH('/admin/collection/{collectionId}/queues/{queueName}', {
        params: { path: { collectionId, queueName } },
        body: { concurrency: Number(concurrency), ratePerSecond: rate.trim() === '' ? null : Number(rate) },
      });
      setSaved(
        `Queue ${q.name}: ${q.concurrency} at a time, ${q.ratePerSecond === null ? 'no rate limit' : `${q.ratePerSecond} a second`}.`,
      );
      onSaved();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="queue-settings">
      <h2 id="queue-settings">Queue settings</h2>
      <form class="grid" onSubmit={submit}>
        <label>
          Queue name
          <input
            name="queueName"
            required
            maxLength={200}
            value={queueName}
            onInput={(e) => setTyped({ ...typed, name: e.currentTarget.value })}
          />
        </label>
        <label>
          Jobs at once
          <input
            name="concurrency"
            type="number"
            min={1}
            max={1000}
            required
            value={concurrency}
            onInput={(e) => setTyped({ ...typed, concurrency: e.currentTarget.value })}
          />
        </label>
        <label>
          Starts a second (empty: no limit)
          <input
            name="ratePerSecond"
            type="number"
            min={0.001}
            max={10000}
            step="any"
            value={rate}
            onInput={(e) => setTyped({ ...typed, rate: e.currentTarget.value })}
          />
        </label>
        <div class="actions wide">
          <button type="submit" disabled={!queueName}>
            Save
          </button>
        </div>
      </form>
      <ErrorNote error={error} doing="save the queue’s settings" />
      {saved ? (
        <p class="notice" role="status">
          {saved}
        </p>
      ) : null}
    </section>
  );
}
