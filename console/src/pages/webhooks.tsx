/**
 * Webhooks: the collection's registrations (create, enable or disable, rotate the secret,
 * send a test event) and, per registration, its delivery log: every attempt with its time,
 * status, duration, error and the receiver's answer, and redeliver.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { A, DataTable, Empty, ErrorNote, Loading, useAsync, usePolling, when } from '../ui.tsx';

type Webhook = Schemas['Webhook'];
type Delivery = Schemas['Delivery'];
const EVENTS = ['link.created', 'link.updated', 'link.deleted', 'link.clicked', 'webhook.disabled'] as const;
type EventType = (typeof EVENTS)[number];

export default function WebhooksPage(props: PageProps) {
  return props.param ? <WebhookDetail {...props} webhookId={props.param} /> : <WebhookList {...props} />;
}

function stateOf(w: Webhook): { text: string; class: string } {
  if (w.disabledAt)
    return { text: `Disabled ${when(w.disabledAt)}: ${w.disabledReason ?? 'no reason given'}`, class: 'bad' };
  if (!w.active) return { text: 'Inactive (switched off)', class: 'muted' };
  return { text: w.consecutiveFailures ? `Active, ${w.consecutiveFailures} failed in a row` : 'Active', class: 'good' };
}

/** A secret is shown once, where it was made (create, rotate): the service never shows it again. */
function SecretNotice({ secret }: { secret: string | undefined }) {
  if (!secret) return null;
  return (
    <div class="notice" role="status">
      <p>
        Signing secret, shown only now: <code class="secret">{secret}</code>
      </p>
      <p class="meta">Copy it to your receiver’s settings. It is not stored in this browser.</p>
    </div>
  );
}

function WebhookList({ api }: PageProps) {
  const list = useAsync(() => api.GET('/v1/webhooks'), [api]);
  const [secret, setSecret] = useState<string>();
  return (
    <>
      <h1>Webhooks</h1>
      <CreateWebhook
        api={api}
        onCreated={(w) => {
          setSecret(w.secret);
          list.reload(true);
        }}
      />
      <SecretNotice secret={secret} />
      <section aria-labelledby="registrations">
        <h2 id="registrations">Registrations</h2>
        <ErrorNote error={list.error} doing="list the registrations" />
        {list.loading && !list.data ? <Loading what="registrations" /> : null}
        {list.data && list.data.items.length === 0 ? (
          <Empty>No registrations yet: add a receiver with the form above.</Empty>
        ) : null}
        {list.data && list.data.items.length > 0 ? (
          <DataTable<Webhook>
            caption={`${list.data.items.length} registration${list.data.items.length === 1 ? '' : 's'}`}
            rows={list.data.items}
            rowKey={(w) => w.id}
            columns={[
              { label: 'Receiver', value: (w) => <A route={`webhooks/${w.id}`}>{w.url}</A> },
              { label: 'Events', value: (w) => w.events.join(', ') },
              { label: 'State', value: (w) => <span class={stateOf(w).class}>{stateOf(w).text}</span> },
              { label: 'Description', value: (w) => w.description ?? '' },
              { label: 'Created', value: (w) => when(w.createdAt) },
            ]}
          />
        ) : null}
      </section>
    </>
  );
}

function CreateWebhook({ api, onCreated }: { api: ServiceClient; onCreated: (w: Webhook) => void }) {
  const [url, setUrl] = useState('');
  const [events, setEvents] = useState<EventType[]>(['link.created', 'link.clicked']);
  const [description, setDescription] = useState('');
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const w = await api.POST('/v1/webhooks', {
        body: { url: url.trim(), events, ...(description.trim() ? { description: description.trim() } : {}) },
      });
      setUrl('');
      setDescription('');
      onCreated(w);
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="new-webhook">
      <h2 id="new-webhook">New registration</h2>
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
        <fieldset>
          <legend>Events</legend>
          {EVENTS.map((ev) => (
            <label key={ev} class="check">
              <input
                type="checkbox"
                name="events"
                value={ev}
                checked={events.includes(ev)}
                onChange={(e) => setEvents(e.currentTarget.checked ? [...events, ev] : events.filter((x) => x !== ev))}
              />
              {ev}
            </label>
          ))}
        </fieldset>
        <label>
          Description (optional)
          <input
            name="description"
            maxLength={500}
            value={description}
            onInput={(e) => setDescription(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Register</button>
      </form>
      <ErrorNote error={error} doing="register the receiver" />
    </section>
  );
}

function WebhookDetail({ api, webhookId }: PageProps & { webhookId: string }) {
  const path = { id: webhookId };
  const hook = useAsync(() => api.GET('/v1/webhooks/{id}', { params: { path } }), [api, webhookId]);
  const [status, setStatus] = useState<'' | 'pending' | 'succeeded' | 'failed' | 'cancelled'>('');
  const [offset, setOffset] = useState(0);
  const deliveries = useAsync(
    () =>
      api.GET('/v1/webhooks/{id}/deliveries', {
        params: { path, query: { status: status || undefined, limit: 20, offset } },
      }),
    [api, webhookId, status, offset],
  );
  const [secret, setSecret] = useState<string>();
  const [actionError, setActionError] = useState<{ error: unknown; doing: string }>();
  const [note, setNote] = useState<string>();

  // Deliveries waiting for an attempt change by themselves: follow them until none waits.
  const waiting = deliveries.data?.items.some((d) => d.status === 'pending') ?? false;
  usePolling(waiting, 1000, () => {
    deliveries.reload(true);
    hook.reload(true);
  });
  // The attempt that ends the wait may also have disabled the registration, in the same
  // transaction; the registration read next to the log's may have come just before it.
  const wasWaiting = useRef(false);
  useEffect(() => {
    if (wasWaiting.current && !waiting) hook.reload(true);
    wasWaiting.current = waiting;
  }, [waiting]);

  const act = async (doing: string, call: () => Promise<unknown>, done?: string) => {
    setActionError(undefined);
    setNote(undefined);
    try {
      await call();
      if (done) setNote(done);
      hook.reload(true);
      deliveries.reload(true);
    } catch (error) {
      setActionError({ error, doing });
    }
  };

  const w = hook.data;
  return (
    <>
      <p>
        <A route="webhooks">← All registrations</A>
      </p>
      <ErrorNote error={hook.error} doing="read the registration" />
      {hook.loading && !w ? <Loading what="the registration" /> : null}
      {w ? (
        <>
          <h1>
            Webhook <span class="url">{w.url}</span>
          </h1>
          <dl class="facts">
            <dt>State</dt>
            <dd class={stateOf(w).class} data-state={w.disabledAt ? 'disabled' : w.active ? 'active' : 'inactive'}>
              {stateOf(w).text}
            </dd>
            <dt>Events</dt>
            <dd>{w.events.join(', ')}</dd>
            <dt>Failed attempts in a row</dt>
            <dd>{w.consecutiveFailures}</dd>
            {w.previousSecretExpiresAt ? (
              <>
                <dt>Previous secret signs until</dt>
                <dd>{when(w.previousSecretExpiresAt)}</dd>
              </>
            ) : null}
            {w.description ? (
              <>
                <dt>Description</dt>
                <dd>{w.description}</dd>
              </>
            ) : null}
          </dl>
          <div class="actions">
            {w.active ? (
              <button
                type="button"
                onClick={() =>
                  act('disable the registration', () =>
                    api.PATCH('/v1/webhooks/{id}', { params: { path }, body: { active: false } }),
                  )
                }
              >
                Disable
              </button>
            ) : (
              <button
                type="button"
                onClick={() =>
                  act(
                    'enable the registration',
                    () => api.PATCH('/v1/webhooks/{id}', { params: { path }, body: { active: true } }),
                    'Enabled: the failure count starts again from 0. Cancelled deliveries can be redelivered.',
                  )
                }
              >
                Enable
              </button>
            )}
            <button
              type="button"
              onClick={() =>
                act(
                  'send a test event',
                  () => api.POST('/v1/webhooks/{id}/test', { params: { path } }),
                  'A webhook.test event is on its way: its delivery is at the top of the log.',
                )
              }
            >
              Send test event
            </button>
            <button
              type="button"
              onClick={() =>
                act('rotate the secret', async () => {
                  const rotated = await api.POST('/v1/webhooks/{id}/rotate-secret', { params: { path }, body: {} });
                  setSecret(rotated.secret);
                })
              }
            >
              Rotate secret
            </button>
          </div>
          {actionError ? <ErrorNote error={actionError.error} doing={actionError.doing} /> : null}
          {note ? (
            <p class="notice" role="status">
              {note}
            </p>
          ) : null}
          <SecretNotice secret={secret} />
          {secret ? (
            <p class="meta">
              The replaced secret keeps signing next to the new one for 24 hours, so receivers can switch.
            </p>
          ) : null}
        </>
      ) : null}
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
                setStatus(e.currentTarget.value as typeof status);
              }}
            >
              <option value="">any</option>
              <option value="pending">pending</option>
              <option value="succeeded">succeeded</option>
              <option value="failed">failed</option>
              <option value="cancelled">cancelled</option>
            </select>
          </label>
          <button
            type="button"
            onClick={() => {
              hook.reload(true);
              deliveries.reload();
            }}
          >
            Refresh
          </button>
        </form>
        <ErrorNote error={deliveries.error} doing="read the delivery log" />
        {deliveries.loading && !deliveries.data ? <Loading what="deliveries" /> : null}
        {deliveries.data && deliveries.data.items.length === 0 ? (
          <Empty>
            {status ? `No ${status} deliveries.` : 'Nothing delivered yet. Send a test event to try the receiver.'}
          </Empty>
        ) : null}
        {deliveries.data?.items.map((d) => (
          <DeliveryCard
            key={d.id}
            delivery={d}
            onRedeliver={() =>
              act(
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
        {deliveries.data && deliveries.data.total > 20 ? (
          <nav class="pager" aria-label="Pages of deliveries">
            <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - 20))}>
              Newer
            </button>
            <span>
              {offset + 1}–{offset + deliveries.data.items.length} of {deliveries.data.total}
            </span>
            <button
              type="button"
              disabled={offset + 20 >= deliveries.data.total}
              onClick={() => setOffset(offset + 20)}
            >
              Older
            </button>
          </nav>
        ) : null}
      </section>
    </>
  );
}

function DeliveryCard({ delivery: d, onRedeliver }: { delivery: Delivery; onRedeliver: () => void }) {
  return (
    <article class={`delivery ${d.status}`} data-delivery={d.id} data-status={d.status} aria-label={`Delivery ${d.id}`}>
      <header>
        <strong>{d.eventType}</strong> <span class={`badge ${d.status}`}>{d.status}</span>{' '}
        <span class="meta">
          {d.attemptCount} attempt{d.attemptCount === 1 ? '' : 's'} · event <code>{d.eventId}</code> · created{' '}
          {when(d.createdAt)}
          {d.nextAttemptAt ? ` · next attempt ${when(d.nextAttemptAt)}` : ''}
        </span>
        <button type="button" onClick={onRedeliver}>
          Redeliver
        </button>
      </header>
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
    </article>
  );
}
