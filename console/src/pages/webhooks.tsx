/**
 * Webhooks: the collection's registrations (create, change, enable or disable, rotate the
 * secret, send a test event, recover) and, per registration, its delivery log
 * (webhook-log.tsx); the event catalogue (webhook-catalogue.tsx) at `webhooks/event-types`.
 * An action the service refuses on an inactive registration (test, redeliver, recover: 409) is
 * not sent: the page says why the registration is off and offers to enable it first.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type Schemas, ServiceError } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { A, DataTable, Empty, ErrorNote, Loading, useAsync, when } from '../ui.tsx';
import { CataloguePage, useCatalogue } from './webhook-catalogue.tsx';
import { WebhookForm } from './webhook-form.tsx';
import { DeliveryLog, type NeedsActive, Recover } from './webhook-log.tsx';

type Webhook = Schemas['Webhook'];

export default function WebhooksPage(props: PageProps) {
  if (props.param === 'event-types') return <CataloguePage {...props} />;
  return props.param ? <WebhookDetail {...props} webhookId={props.param} /> : <WebhookList {...props} />;
}

function stateOf(w: Webhook): { text: string; class: string } {
  if (w.disabledAt)
    return { text: `Disabled ${when(w.disabledAt)}: ${w.disabledReason ?? 'no reason given'}`, class: 'bad' };
  if (!w.active) return { text: 'Inactive (switched off)', class: 'muted' };
  return {
    text: w.consecutiveFailures ? `Active, ${w.consecutiveFailures} failed deliveries in a row` : 'Active',
    class: 'good',
  };
}

/** `linkIds: lnk_1, lnk_2 · appIds: shop`, or undefined without filters. */
function filtersText(w: Webhook): string | undefined {
  const parts = Object.entries(w.filters ?? {})
    .filter(([, ids]) => ids && ids.length > 0)
    .map(([key, ids]) => `${key}: ${(ids as string[]).join(', ')}`);
  return parts.length > 0 ? parts.join(' · ') : undefined;
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
  const catalogue = useCatalogue(api);
  const [secret, setSecret] = useState<string>();
  // A new key empties the form after a registration is made.
  const [formKey, setFormKey] = useState(0);
  return (
    <>
      <h1>Webhooks</h1>
      <p>
        <A route="webhooks/event-types">The event catalogue</A>: every event type, the schema of its data and an
        example.
      </p>
      <section aria-labelledby="new-webhook">
        <h2 id="new-webhook">New registration</h2>
        <WebhookForm
          key={formKey}
          catalogue={catalogue.data}
          catalogueError={catalogue.error}
          submitLabel="Register"
          doing="register the receiver"
          onSubmit={async (v) => {
            const w = await api.POST('/v1/webhooks', {
              body: {
                url: v.url,
                events: v.events,
                ...(v.filters ? { filters: v.filters } : {}),
                ...(v.description ? { description: v.description } : {}),
              },
            });
            setSecret(w.secret);
            setFormKey((k) => k + 1);
            list.reload(true);
          }}
        />
      </section>
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
              { label: 'Filters', value: (w) => filtersText(w) ?? '' },
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

function WebhookDetail({ api, webhookId }: PageProps & { webhookId: string }) {
  const path = { id: webhookId };
  const hook = useAsync(() => api.GET('/v1/webhooks/{id}', { params: { path } }), [api, webhookId]);
  const catalogue = useCatalogue(api);
  const [version, setVersion] = useState(0);
  const [secret, setSecret] = useState<string>();
  const [actionError, setActionError] = useState<{ error: unknown; doing: string }>();
  const [note, setNote] = useState<string>();
  /** The action that waits for the registration to be enabled ("redeliver"), when asked for. */
  const [prompt, setPrompt] = useState<string>();
  const [editKey, setEditKey] = useState(0);
  const promptRef = useRef<HTMLDivElement>(null);
  useEffect(() => promptRef.current?.scrollIntoView({ block: 'nearest' }), [prompt]);

  const act = async (doing: string, call: () => Promise<unknown>, done?: string, needsActive = false) => {
    setActionError(undefined);
    setNote(undefined);
    setPrompt(undefined);
    try {
      await call();
      if (done) setNote(done);
    } catch (error) {
      // Disabled meanwhile (by another tab, or by the failure that just ended): guide, not a 409.
      if (needsActive && error instanceof ServiceError && error.status === 409) setPrompt(doing);
      else setActionError({ error, doing });
    }
    hook.reload(true);
    setVersion((v) => v + 1);
  };
  const w = hook.data;
  const needsActive: NeedsActive = (doing, call, done) => {
    if (w && !w.active) {
      setActionError(undefined);
      setNote(undefined);
      setPrompt(doing);
      return;
    }
    void act(doing, call, done, true);
  };
  const setActive = (active: boolean, done?: string) =>
    act(
      `${active ? 'enable' : 'disable'} the registration`,
      () => api.PATCH('/v1/webhooks/{id}', { params: { path }, body: { active } }),
      done,
    );

  return (
    <>
      <p>
        <A route="webhooks">← All registrations</A> · <A route="webhooks/event-types">Event catalogue</A>
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
            <dt>Filters</dt>
            <dd data-filters>{filtersText(w) ?? 'none: every event of these types'}</dd>
            <dt>Failed deliveries in a row</dt>
            <dd>{w.consecutiveFailures}</dd>
            <dt>Rate limit</dt>
            <dd>{w.maxPerSecond ? `${w.maxPerSecond} attempts a second` : 'none'}</dd>
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
          {w.active ? null : (
            <div class="warning" data-inactive={w.disabledAt ? 'disabled' : 'switched-off'}>
              <p>
                <strong>{w.disabledAt ? `Disabled ${when(w.disabledAt)}` : 'Switched off'}</strong>
                {w.disabledAt
                  ? `: ${w.disabledReason ?? 'no reason given'}.`
                  : ' by a change to the registration, not by failures.'}
              </p>
              <p>
                Nothing is sent to it meanwhile: new events make no delivery for it, and a test, a redelivery or a
                recovery waits until it is enabled. Once the receiver answers again, enable it, then recover what it
                missed.
              </p>
            </div>
          )}
          <div class="actions">
            {w.active ? (
              <button type="button" onClick={() => setActive(false)}>
                Disable
              </button>
            ) : (
              <button
                type="button"
                onClick={() =>
                  setActive(true, 'Enabled: the failure count starts again from 0. Recover sends what it missed.')
                }
              >
                Enable
              </button>
            )}
            <button
              type="button"
              onClick={() =>
                needsActive(
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
          {prompt ? (
            <div class="warning" role="status" data-prompt="enable-first" ref={promptRef}>
              <p>
                To {prompt}, enable the registration first:{' '}
                {w.disabledAt
                  ? `it was disabled ${when(w.disabledAt)} (${w.disabledReason ?? 'no reason given'})`
                  : 'it is switched off'}
                , and nothing is sent to an inactive registration.
              </p>
              <div class="actions">
                <button
                  type="button"
                  onClick={() =>
                    setActive(true, `Enabled: the failure count starts again from 0. You can ${prompt} now.`)
                  }
                >
                  Enable it first
                </button>
                <button type="button" onClick={() => setPrompt(undefined)}>
                  Not now
                </button>
              </div>
            </div>
          ) : null}
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
          <details class="edit">
            <summary>Change the address, events, filters or description</summary>
            <WebhookForm
              key={`${w.id}-${editKey}`}
              catalogue={catalogue.data}
              catalogueError={catalogue.error}
              initial={{ url: w.url, events: w.events, filters: w.filters, description: w.description ?? '' }}
              submitLabel="Save"
              doing="change the registration"
              onSubmit={async (v) => {
                await api.PATCH('/v1/webhooks/{id}', {
                  params: { path },
                  body: { url: v.url, events: v.events, filters: v.filters, description: v.description || null },
                });
                setEditKey((k) => k + 1);
                setNote('Saved: later events are chosen and filtered this way.');
                hook.reload(true);
              }}
            />
          </details>
          <Recover api={api} webhookId={webhookId} needsActive={needsActive} />
        </>
      ) : null}
      <DeliveryLog
        api={api}
        webhookId={webhookId}
        catalogue={catalogue.data}
        version={version}
        needsActive={needsActive}
        onWaitingChange={() => hook.reload(true)}
      />
    </>
  );
}
