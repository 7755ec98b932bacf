/**
 * A registration's delivery log: one compact row per delivery (time, event type, status,
 * attempts, last status code), filtered by status and event type, each row opening onto its
 * attempts and the payload it sent; and recover, which sends again what failed since a time.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import { DataTable, Empty, ErrorNote, json, Loading, useAsync, usePolling, when } from '../ui.tsx';
import { type EventType, families } from './webhook-catalogue.tsx';

type Delivery = Schemas['Delivery'];
type Status = '' | 'pending' | 'succeeded' | 'failed' | 'cancelled';
const PAGE = 20;

/**
 * An action that needs an active registration (redeliver, test, recover): the page either runs
 * it or, the registration being inactive, asks to enable it first instead of calling the API.
 */
export type NeedsActive = (doing: string, call: () => Promise<unknown>, done?: string) => void;

export function DeliveryLog({
  api,
  webhookId,
  catalogue,
  version,
  needsActive,
  onWaitingChange,
}: {
  api: ServiceClient;
  webhookId: string;
  catalogue: EventType[] | undefined;
  /** Changed by the page after an action: the log reads again. */
  version: number;
  needsActive: NeedsActive;
  /** Called on each poll and when the last waiting delivery settles (its registration may have changed). */
  onWaitingChange: () => void;
}) {
  const [status, setStatus] = useState<Status>('');
  const [eventType, setEventType] = useState('');
  const [offset, setOffset] = useState(0);
  const [open, setOpen] = useState<ReadonlySet<string>>(new Set());
  const deliveries = useAsync(
    () =>
      api.GET('/v1/webhooks/{id}/deliveries', {
        params: {
          path: { id: webhookId },
          query: { status: status || undefined, eventType: eventType || undefined, limit: PAGE, offset },
        },
      }),
    [api, webhookId, status, eventType, offset],
  );
  const first = useRef(true);
  useEffect(() => {
    if (first.current) first.current = false;
    else deliveries.reload(true);
  }, [version]);

  // Deliveries waiting for an attempt change by themselves: follow them until none waits.
  const waiting = deliveries.data?.items.some((d) => d.status === 'pending') ?? false;
  usePolling(waiting, 1000, () => {
    deliveries.reload(true);
    onWaitingChange();
  });
  // The attempt that ends the wait may also have disabled the registration, in the same
  // transaction; the registration read next to the log's may have come just before it.
  const wasWaiting = useRef(false);
  useEffect(() => {
    if (wasWaiting.current && !waiting) onWaitingChange();
    wasWaiting.current = waiting;
  }, [waiting]);

  // The filter offers the catalogue's types (webhook.test included), and any type met in the
  // log that it does not list.
  const seen = (deliveries.data?.items ?? []).map((d) => d.eventType);
  const known = new Set((catalogue ?? []).map((t) => t.type));
  const others = [...new Set([...seen, eventType].filter((t) => t && !known.has(t)))];
  const toggle = (id: string) => {
    const next = new Set(open);
    if (!next.delete(id)) next.add(id);
    setOpen(next);
  };
  const items = deliveries.data?.items ?? [];

  return (
    <section aria-labelledby="delivery-log">
      <h2 id="delivery-log">Delivery log</h2>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select
            name="status"
            value={status}
            onChange={(e) => {
              setOffset(0);
              setStatus(e.currentTarget.value as Status);
            }}
          >
            <option value="">any</option>
            <option value="pending">pending</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
            <option value="cancelled">cancelled</option>
          </select>
        </label>
        <label>
          Event type
          <select
            name="eventType"
            value={eventType}
            onChange={(e) => {
              setOffset(0);
              setEventType(e.currentTarget.value);
            }}
          >
            <option value="">any</option>
            {families(catalogue ?? []).map((f) => (
              <optgroup key={f.name} label={f.name}>
                {f.types.map((t) => (
                  <option key={t.type} value={t.type}>
                    {t.type}
                  </option>
                ))}
              </optgroup>
            ))}
            {others.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          onClick={() => {
            onWaitingChange();
            deliveries.reload();
          }}
        >
          Refresh
        </button>
      </form>
      <ErrorNote error={deliveries.error} doing="read the delivery log" />
      {deliveries.loading && !deliveries.data ? <Loading what="deliveries" /> : null}
      {deliveries.data && items.length === 0 ? (
        <Empty>
          {status || eventType
            ? `No ${[status, eventType].filter(Boolean).join(' ')} deliveries.`
            : 'Nothing delivered yet. Send a test event to try the receiver.'}
        </Empty>
      ) : null}
      {items.length > 0 ? (
        <div class="table-wrap">
          <table class="deliveries">
            <caption>Deliveries, newest first{deliveries.data ? ` (${deliveries.data.total} in all)` : ''}</caption>
            <thead>
              <tr>
                <th scope="col">
                  <span class="visually-hidden">Open</span>
                </th>
                <th scope="col">Time</th>
                <th scope="col">Event type</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">
                  Attempts
                </th>
                <th scope="col" class="num">
                  Last status code
                </th>
              </tr>
            </thead>
            {items.map((d) => (
              <DeliveryRows
                key={d.id}
                api={api}
                delivery={d}
                open={open.has(d.id)}
                onToggle={() => toggle(d.id)}
                onRedeliver={() =>
                  needsActive(
                    'redeliver',
                    () =>
                      api.POST('/v1/webhooks/{id}/deliveries/{deliveryId}/redeliver', {
                        params: { path: { id: webhookId, deliveryId: d.id } },
                      }),
                    `Delivery ${d.id} is sent again.`,
                  )
                }
              />
            ))}
          </table>
        </div>
      ) : null}
      {deliveries.data && deliveries.data.total > PAGE ? (
        <nav class="pager" aria-label="Pages of deliveries">
          <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>
            Newer
          </button>
          <span>
            {offset + 1}–{offset + items.length} of {deliveries.data.total}
          </span>
          <button
            type="button"
            disabled={offset + PAGE >= deliveries.data.total}
            onClick={() => setOffset(offset + PAGE)}
          >
            Older
          </button>
        </nav>
      ) : null}
    </section>
  );
}

/** One delivery: its row, and when open a second row with its attempts and payload. */
function DeliveryRows({
  api,
  delivery: d,
  open,
  onToggle,
  onRedeliver,
}: {
  api: ServiceClient;
  delivery: Delivery;
  open: boolean;
  onToggle: () => void;
  onRedeliver: () => void;
}) {
  const detailId = `delivery-${d.id}`;
  return (
    <tbody class={`delivery ${d.status}`} data-delivery={d.id} data-status={d.status} data-event-type={d.eventType}>
      <tr class="summary">
        <td>
          <button
            type="button"
            class="disclosure"
            aria-expanded={open}
            aria-controls={detailId}
            aria-label={`Attempts and payload of delivery ${d.id}`}
            onClick={onToggle}
          >
            {open ? '▾' : '▸'}
          </button>
        </td>
        <td>{when(d.createdAt)}</td>
        <td>
          <code>{d.eventType}</code>
        </td>
        <td>
          <span class={`badge ${d.status}`}>{d.status}</span>
          {d.nextAttemptAt ? <span class="meta"> next {when(d.nextAttemptAt)}</span> : null}
        </td>
        <td class="num">{d.attemptCount}</td>
        <td class="num">{d.lastStatusCode ?? '—'}</td>
      </tr>
      {open ? (
        <tr class="detail" id={detailId}>
          <td colSpan={6}>
            <DeliveryDetail api={api} delivery={d} onRedeliver={onRedeliver} />
          </td>
        </tr>
      ) : null}
    </tbody>
  );
}

function DeliveryDetail({
  api,
  delivery: d,
  onRedeliver,
}: {
  api: ServiceClient;
  delivery: Delivery;
  onRedeliver: () => void;
}) {
  // The attempts come with the log's rows (and follow its polling); the payload, the same for
  // every attempt, only with the delivery itself: read once, when the row is opened.
  const one = useAsync(
    () =>
      api.GET('/v1/webhooks/{id}/deliveries/{deliveryId}', {
        params: { path: { id: d.webhookId, deliveryId: d.id } },
      }),
    [api, d.webhookId, d.id],
  );
  return (
    <div class="delivery-detail">
      <p class="meta">
        Delivery <code>{d.id}</code> · event <code>{d.eventId}</code> · created {when(d.createdAt)} · updated{' '}
        {when(d.updatedAt)}
        {d.nextAttemptAt ? ` · next attempt ${when(d.nextAttemptAt)}` : ''}
      </p>
      {d.lastError ? <p class="error-text">Last error: {d.lastError}</p> : null}
      <div class="actions">
        <button type="button" onClick={onRedeliver}>
          Redeliver
        </button>
      </div>
      {d.attempts.length === 0 ? (
        <Empty>No attempt yet.</Empty>
      ) : (
        <DataTable
          caption={`Attempts of delivery ${d.id}`}
          class="attempts"
          rows={d.attempts}
          rowKey={(a) => a.attempt}
          columns={[
            { label: '#', value: (a) => a.attempt, numeric: true },
            { label: 'Trigger', value: (a) => a.trigger },
            { label: 'Time', value: (a) => when(a.at) },
            { label: 'Status', value: (a) => a.statusCode ?? '—', numeric: true },
            { label: 'Outcome', value: (a) => <span class={`badge ${a.outcome}`}>{a.outcome}</span> },
            { label: 'Duration', value: (a) => `${a.durationMs} ms`, numeric: true },
            { label: 'Error', value: (a) => a.error ?? '' },
            {
              label: 'Response (excerpt)',
              value: (a) => (a.responseExcerpt ? <code class="excerpt">{a.responseExcerpt}</code> : ''),
            },
          ]}
        />
      )}
      <h4>Payload (the body every attempt sent)</h4>
      <ErrorNote error={one.error} doing="read the payload" />
      {one.loading && !one.data ? <Loading what="the payload" /> : null}
      {one.data ? (
        <pre class="json" data-payload={d.id}>
          {one.data.payload ? json(one.data.payload) : 'not kept'}
        </pre>
      ) : null}
    </div>
  );
}

/** A time as `datetime-local` shows it, in UTC as the console shows every time. */
const utcInput = (d: Date) => d.toISOString().slice(0, 16);
/** `datetime-local`'s value (`…T10:30`, or `…T10:30:15` with seconds), read as UTC, → ISO 8601. */
const fromUtcInput = (v: string) => new Date(`${v}${v.length === 16 ? ':00' : ''}Z`).toISOString();

/** Sends again every failed or cancelled delivery created since a time (the count is shown). */
export function Recover({
  api,
  webhookId,
  needsActive,
}: {
  api: ServiceClient;
  webhookId: string;
  needsActive: NeedsActive;
}) {
  const [since, setSince] = useState(() => utcInput(new Date(Date.now() - 86_400_000)));
  const [answer, setAnswer] = useState<Schemas['RecoverWebhookAnswer']>();
  const submit = (e: Event) => {
    e.preventDefault();
    setAnswer(undefined);
    needsActive('recover', async () => {
      const a = await api.POST('/v1/webhooks/{id}/recover', {
        params: { path: { id: webhookId } },
        body: { since: fromUtcInput(since) },
      });
      setAnswer(a);
    });
  };
  return (
    <section aria-labelledby="recover">
      <h2 id="recover">Recover</h2>
      <p class="meta">
        Send again every failed or cancelled delivery created since a time: the same events (same ids and bodies), each
        with a fresh set of automatic retries.
      </p>
      <form class="inline" onSubmit={submit}>
        <label>
          Since (UTC)
          <input
            name="since"
            type="datetime-local"
            required
            value={since}
            onInput={(e) => setSince(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Recover</button>
      </form>
      {answer ? (
        <p class="notice" role="status" data-recovered={answer.count}>
          {answer.count === 0
            ? 'No failed or cancelled delivery since then: nothing to send again.'
            : `${answer.count} deliver${answer.count === 1 ? 'y' : 'ies'} queued again: follow them in the log.`}
          {answer.more ? ' More remain (at most 10,000 a call): recover again with the same time.' : ''}
        </p>
      ) : null}
    </section>
  );
}
