/**
 * Domains: the collection's own short-link domains. A domain is added, then proven (a DNS TXT
 * record or a file served on it, either one) before links may use it; the page shows both
 * proofs with copy buttons, checks on request, says why a check failed, and deletes a domain
 * no link uses any more.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { ConfirmDelete, CopyButton, Empty, ErrorNote, Loading, useAsync, when } from '../ui.tsx';

type Domain = Schemas['LinkDomain'];

export default function DomainsPage({ api, collectionId }: PageProps) {
  const domains = useAsync(
    () => api.GET('/admin/collection/{collectionId}/domains', { params: { path: { collectionId } } }),
    [api, collectionId],
  );
  const items = domains.data?.items ?? [];
  return (
    <>
      <h1>Domains</h1>
      <p class="meta">
        Short links live on the service’s own address unless they name a domain of the collection. A domain serves the
        collection’s links once it is verified: point it at this service, prove it is yours with either proof below,
        then pick it when creating a link (its address becomes <code>https://&lt;domain&gt;/&lt;code&gt;</code>).
      </p>
      <AddDomain api={api} collectionId={collectionId} onAdded={() => domains.reload(true)} />
      <section aria-labelledby="domains-list">
        <h2 id="domains-list">The collection’s domains</h2>
        <ErrorNote error={domains.error} doing="list the domains" />
        {domains.loading && !domains.data ? <Loading what="domains" /> : null}
        {domains.data && items.length === 0 ? <Empty>No domains yet: add one above.</Empty> : null}
        {items.map((d) => (
          <DomainCard
            key={d.domain}
            api={api}
            collectionId={collectionId}
            domain={d}
            onChanged={() => domains.reload(true)}
          />
        ))}
      </section>
    </>
  );
}

function AddDomain({ api, collectionId, onAdded }: { api: ServiceClient; collectionId: string; onAdded: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>();
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      await api.POST('/admin/collection/{collectionId}/domains', {
        params: { path: { collectionId } },
        body: { domain: name.trim() },
      });
      setName('');
      onAdded();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="new-domain">
      <h2 id="new-domain">Add a domain</h2>
      <form class="inline" onSubmit={submit}>
        <label>
          Domain
          <input
            name="domain"
            required
            maxLength={253}
            placeholder="go.example.com"
            value={name}
            onInput={(e) => setName(e.currentTarget.value)}
          />
        </label>
        <button type="submit">Add domain</button>
      </form>
      <ErrorNote error={error} doing="add the domain" />
    </section>
  );
}

function DomainCard({
  api,
  collectionId,
  domain: d,
  onChanged,
}: {
  api: ServiceClient;
  collectionId: string;
  domain: Domain;
  onChanged: () => void;
}) {
  const [error, setError] = useState<unknown>();
  const [checking, setChecking] = useState(false);
  const params = { path: { collectionId, domain: d.domain } };
  const verify = async () => {
    setError(undefined);
    setChecking(true);
    try {
      await api.POST('/admin/collection/{collectionId}/domains/{domain}/verify', { params, body: {} });
    } catch (err) {
      setError(err);
    } finally {
      setChecking(false);
      onChanged();
    }
  };
  const remove = async () => {
    setError(undefined);
    try {
      await api.DELETE('/admin/collection/{collectionId}/domains/{domain}', { params });
      onChanged();
    } catch (err) {
      setError(err);
    }
  };
  const v = d.verification;
  return (
    <article class="domain" data-domain={d.domain} aria-labelledby={`domain-${d.domain}`}>
      <h3 id={`domain-${d.domain}`}>
        <code>{d.domain}</code>{' '}
        <span
          class={`badge ${d.verified ? 'active' : 'paused'}`}
          data-domain-state={d.verified ? 'verified' : 'pending'}
        >
          {d.verified ? 'verified' : 'not verified'}
        </span>
      </h3>
      {d.verified ? (
        <p class="meta">Verified {when(d.verifiedAt)}: links may use it.</p>
      ) : (
        <>
          <p>Prove the domain is the collection’s with either of these, then check:</p>
          <dl class="facts">
            <dt>DNS: a TXT record</dt>
            <dd>
              <code>{v.dns.name}</code> <CopyButton text={v.dns.name} what="the record's name" /> with the value{' '}
              <code>{v.dns.value}</code> <CopyButton text={v.dns.value} what="the record's value" />
            </dd>
            <dt>HTTP: a file</dt>
            <dd>
              <code>{v.http.url}</code> answering <code>{v.http.body}</code>{' '}
              <CopyButton text={v.http.body} what="the file's content" />
            </dd>
          </dl>
          {d.checkError ? (
            <p class="error" role="alert">
              Last check ({when(d.checkedAt)}): {d.checkError}
            </p>
          ) : null}
        </>
      )}
      <div class="actions">
        {d.verified ? null : (
          <button type="button" onClick={verify} disabled={checking}>
            {checking ? 'Checking…' : 'Check now'}
          </button>
        )}
        <ConfirmDelete what={`the domain ${d.domain}`} onConfirm={remove} />
      </div>
      <ErrorNote error={error} doing={`change ${d.domain}`} />
    </article>
  );
}
