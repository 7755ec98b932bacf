/**
 * Links: the collection's short links (search, pages of 20, create on a domain of the
 * collection, the QR code of each), and one link's page (edit; clicks over time per hour or
 * day; clicks by country, device type and referer; its QR code; its conversions).
 */
import { useMemo, useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import { Chart, COLORS } from '../chart.tsx';
import type { PageProps } from '../main.tsx';
import { A, CopyButton, DataTable, Empty, ErrorNote, Figure, Loading, useAsync, when } from '../ui.tsx';
import { AnalyticsPanel } from './link-analytics.tsx';
import { ConversionsPanel } from './link-conversions.tsx';
import { QrButton, QrPanel } from './link-qr.tsx';

type Link = Schemas['Link'];
const PAGE_SIZE = 20;

export default function LinksPage(props: PageProps) {
  return props.param ? <LinkDetail {...props} linkId={props.param} /> : <LinkList {...props} />;
}

const tagsFrom = (text: string) =>
  text
    .split(',')
    .map((t) => t.trim())
    .filter(Boolean);

function LinkList({ api, collectionId }: PageProps) {
  const [q, setQ] = useState('');
  const [search, setSearch] = useState('');
  const [offset, setOffset] = useState(0);
  const path = { collectionId };
  const page = useAsync(
    () =>
      api.GET('/admin/collection/{collectionId}/links', {
        params: { path, query: { q: search || undefined, limit: PAGE_SIZE, offset } },
      }),
    [api, collectionId, search, offset],
  );
  return (
    <>
      <h1>Links</h1>
      <CreateLink api={api} collectionId={collectionId} onCreated={() => (offset ? setOffset(0) : page.reload())} />
      <section aria-labelledby="links-list">
        <h2 id="links-list">All links</h2>
        <search>
          <form
            class="inline"
            onSubmit={(e) => {
              e.preventDefault();
              setOffset(0);
              setSearch(q.trim());
            }}
          >
            <label>
              Search
              <input
                type="search"
                name="q"
                maxLength={200}
                placeholder="code, title or destination"
                value={q}
                onInput={(e) => setQ(e.currentTarget.value)}
              />
            </label>
            <button type="submit">Search</button>
          </form>
        </search>
        <ErrorNote error={page.error} doing="list the links" />
        {page.loading && !page.data ? <Loading what="links" /> : null}
        {page.data && page.data.items.length === 0 ? (
          <Empty>{search ? `No link matches “${search}”.` : 'No links yet: create one with the form above.'}</Empty>
        ) : null}
        {page.data && page.data.items.length > 0 ? (
          <>
            <DataTable<Link>
              caption={`Links ${page.data.offset + 1}–${page.data.offset + page.data.items.length} of ${page.data.total}`}
              rows={page.data.items}
              rowKey={(l) => l.id}
              columns={[
                { label: 'Code', value: (l) => <A route={`links/${l.id}`}>{l.code}</A> },
                {
                  label: 'Short address',
                  value: (l) => (
                    <span class="short-url">
                      <code>{l.shortUrl}</code>
                      <CopyButton text={l.shortUrl} what={`the short address of ${l.code}`} />
                      <QrButton api={api} collectionId={collectionId} linkId={l.id} code={l.code} />
                    </span>
                  ),
                },
                { label: 'Title', value: (l) => l.title ?? '' },
                { label: 'Destination', value: (l) => <span class="url">{l.destinationUrl}</span> },
                { label: 'Clicks', value: (l) => l.clicks, numeric: true },
                { label: 'Created', value: (l) => when(l.createdAt) },
              ]}
            />
            <nav class="pager" aria-label="Pages of links">
              <button type="button" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE_SIZE))}>
                Previous
              </button>
              <button
                type="button"
                disabled={offset + PAGE_SIZE >= page.data.total}
                onClick={() => setOffset(offset + PAGE_SIZE)}
              >
                Next
              </button>
            </nav>
          </>
        ) : null}
      </section>
      {page.data && page.data.total > 0 ? <AnalyticsPanel api={api} collectionId={collectionId} /> : null}
    </>
  );
}

function CreateLink({
  api,
  collectionId,
  onCreated,
}: {
  api: ServiceClient;
  collectionId: string;
  onCreated: () => void;
}) {
  const [url, setUrl] = useState('');
  const [code, setCode] = useState('');
  const [title, setTitle] = useState('');
  const [tags, setTags] = useState('');
  const [domain, setDomain] = useState('');
  const [track, setTrack] = useState(false);
  const [error, setError] = useState<unknown>();
  const [created, setCreated] = useState<Link>();
  const domains = useAsync(
    () => api.GET('/admin/collection/{collectionId}/domains', { params: { path: { collectionId } } }),
    [api, collectionId],
  );
  const usable = (domains.data?.items ?? []).filter((d) => d.verified);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    try {
      const link = await api.POST('/admin/collection/{collectionId}/links', {
        params: { path: { collectionId } },
        body: {
          url: url.trim(),
          ...(code.trim() ? { code: code.trim() } : {}),
          ...(title.trim() ? { title: title.trim() } : {}),
          ...(tagsFrom(tags).length ? { tags: tagsFrom(tags) } : {}),
          ...(domain ? { domain } : {}),
          ...(track ? { trackConversions: true } : {}),
        },
      });
      setCreated(link);
      setUrl('');
      setCode('');
      setTitle('');
      setTags('');
      onCreated();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="new-link">
      <h2 id="new-link">New link</h2>
      <form class="grid" onSubmit={submit}>
        <label>
          Destination
          <input
            name="url"
            type="url"
            required
            maxLength={2048}
            placeholder="https://example.com/page"
            value={url}
            onInput={(e) => setUrl(e.currentTarget.value)}
          />
        </label>
        <label>
          Code (optional)
          <input name="code" maxLength={64} value={code} onInput={(e) => setCode(e.currentTarget.value)} />
        </label>
        <label>
          Title (optional)
          <input name="title" maxLength={300} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <label>
          Tags (comma-separated)
          <input name="tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </label>
        <label>
          Domain
          <select name="domain" value={domain} onChange={(e) => setDomain(e.currentTarget.value)}>
            <option value="">the service’s own</option>
            {usable.map((d) => (
              <option key={d.domain} value={d.domain}>
                {d.domain}
              </option>
            ))}
          </select>
        </label>
        <label class="check">
          <input
            name="trackConversions"
            type="checkbox"
            checked={track}
            onChange={(e) => setTrack(e.currentTarget.checked)}
          />
          Track conversions (a click id for the app’s events)
        </label>
        <button type="submit">Create link</button>
      </form>
      <ErrorNote error={error} doing="create the link" />
      {created ? (
        <p class="notice" role="status">
          Created <A route={`links/${created.id}`}>{created.shortUrl}</A> → {created.destinationUrl}
        </p>
      ) : null}
    </section>
  );
}

function LinkDetail({ api, collectionId, linkId }: PageProps & { linkId: string }) {
  const path = { collectionId, linkId };
  const link = useAsync(
    () => api.GET('/admin/collection/{collectionId}/links/{linkId}', { params: { path } }),
    [api, collectionId, linkId],
  );
  return (
    <>
      <p>
        <A route="links">← All links</A>
      </p>
      <ErrorNote error={link.error} doing="read the link" />
      {link.loading && !link.data ? <Loading what="the link" /> : null}
      {link.data ? (
        <>
          <h1>
            Link <code>{link.data.code}</code>
          </h1>
          <dl class="facts">
            <dt>Short address</dt>
            <dd>
              <code>{link.data.shortUrl}</code>
              <CopyButton text={link.data.shortUrl} what="the short address" />
            </dd>
            <dt>Destination</dt>
            <dd class="url">{link.data.destinationUrl}</dd>
            <dt>Clicks (all time)</dt>
            <dd>{link.data.clicks}</dd>
            <dt>Created</dt>
            <dd>{when(link.data.createdAt)}</dd>
            <dt>Expires</dt>
            <dd>
              {link.data.expiresAt ? when(link.data.expiresAt) : 'never'}
              {link.data.expiredUrl ? (
                <>
                  {' '}
                  (then to <span class="url">{link.data.expiredUrl}</span>)
                </>
              ) : null}
            </dd>
            <dt>Domain</dt>
            <dd>{link.data.domain ?? 'the service’s own'}</dd>
            <dt>Routing</dt>
            <dd>{routingSummary(link.data)}</dd>
          </dl>
          <ClickStats api={api} collectionId={collectionId} linkId={linkId} onRefresh={() => link.reload(true)} />
          <AnalyticsPanel api={api} collectionId={collectionId} linkId={linkId} />
          <ConversionsPanel
            api={api}
            collectionId={collectionId}
            linkId={linkId}
            tracking={link.data.trackConversions}
          />
          <QrPanel api={api} collectionId={collectionId} linkId={linkId} code={link.data.code} />
          <EditLink api={api} collectionId={collectionId} link={link.data} onSaved={() => link.reload(true)} />
        </>
      ) : null}
    </>
  );
}

/** What decides where a visit goes, in a line (the API has the details). */
function routingSummary(l: Link): string {
  const parts = [
    l.rules?.length ? `${l.rules.length} rule${l.rules.length === 1 ? '' : 's'}` : '',
    l.variants?.length ? `A/B: ${l.variants.map((v) => v.weight).join('/')}` : '',
    l.passwordProtected ? 'password' : '',
    l.passQuery ? 'query passed on' : 'query dropped',
    l.trackConversions ? 'click ids' : '',
  ].filter(Boolean);
  return parts.join(' · ');
}

const WINDOWS = {
  hour: [
    { label: 'Last 24 hours', ms: 24 * 3_600_000 },
    { label: 'Last 48 hours', ms: 48 * 3_600_000 },
    { label: 'Last 7 days', ms: 7 * 86_400_000 },
  ],
  day: [
    { label: 'Last 30 days', ms: 30 * 86_400_000 },
    { label: 'Last 90 days', ms: 90 * 86_400_000 },
    { label: 'Last 365 days', ms: 365 * 86_400_000 },
  ],
} as const;

function ClickStats({
  api,
  collectionId,
  linkId,
  onRefresh,
}: {
  api: ServiceClient;
  collectionId: string;
  linkId: string;
  /** Refresh reads the link again too (its all-time count). */
  onRefresh: () => void;
}) {
  const [interval, setBucket] = useState<'hour' | 'day'>('hour');
  const [windowIndex, setWindowIndex] = useState(0);
  const [refreshed, setRefreshed] = useState(0);
  const stats = useAsync(() => {
    const to = new Date();
    const from = new Date(to.getTime() - WINDOWS[interval][windowIndex].ms);
    return api.GET('/admin/collection/{collectionId}/links/{linkId}/clicks/stats', {
      params: {
        path: { collectionId, linkId },
        query: { interval, from: from.toISOString(), to: to.toISOString(), top: 8 },
      },
    });
  }, [api, collectionId, linkId, interval, windowIndex, refreshed]);
  const spec = useMemo(
    () =>
      stats.data && {
        kind: 'time' as const,
        x: stats.data.series.map((b) => Date.parse(b.start) / 1000),
        stepSeconds: interval === 'hour' ? 3600 : 86_400,
        series: [{ label: 'Clicks', values: stats.data.series.map((b) => b.count), color: COLORS.primary }],
      },
    [stats.data, interval],
  );
  const unit = interval === 'hour' ? 'hour' : 'day';
  return (
    <section aria-labelledby="clicks-title">
      <h2 id="clicks-title">Recent clicks</h2>
      <p class="meta">
        Every click stored, bots included, per hour or day (the original interface's click stats). The breakdowns,
        unique visitors and bot filter are under Analytics below.
      </p>
      <form class="inline" onSubmit={(e) => e.preventDefault()}>
        <label>
          Per
          <select
            name="interval"
            value={interval}
            onChange={(e) => {
              setBucket(e.currentTarget.value as 'hour' | 'day');
              setWindowIndex(0);
            }}
          >
            <option value="hour">hour</option>
            <option value="day">day</option>
          </select>
        </label>
        <label>
          Window
          <select
            name="window"
            value={String(windowIndex)}
            onChange={(e) => setWindowIndex(Number(e.currentTarget.value))}
          >
            {WINDOWS[interval].map((w, i) => (
              <option key={w.label} value={String(i)}>
                {w.label}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          onClick={() => {
            setRefreshed(refreshed + 1);
            onRefresh();
          }}
        >
          Refresh
        </button>
      </form>
      <ErrorNote error={stats.error} doing="count the clicks" />
      {stats.loading && !stats.data ? <Loading what="the click counts" /> : null}
      {stats.data && spec ? (
        <>
          <p class="total" aria-live="polite">
            <strong data-total-clicks={stats.data.total}>{stats.data.total}</strong>{' '}
            {stats.data.total === 1 ? 'click' : 'clicks'} from {when(stats.data.from)} to {when(stats.data.to)}
          </p>
          <Figure
            title={`Clicks per ${unit}`}
            chart={<Chart spec={spec} label={`Clicks per ${unit}: ${stats.data.total} in the window`} />}
            table={
              <DataTable
                caption={`Clicks per ${unit} (UTC)`}
                class="series"
                rows={stats.data.series.filter((b) => b.count > 0 || stats.data!.series.length <= 48)}
                rowKey={(b) => b.bucket}
                columns={[
                  { label: unit === 'hour' ? 'Hour' : 'Day', value: (b) => b.bucket },
                  { label: 'Clicks', value: (b) => b.count, numeric: true },
                ]}
              />
            }
          />
        </>
      ) : null}
    </section>
  );
}

function EditLink({
  api,
  collectionId,
  link,
  onSaved,
}: {
  api: ServiceClient;
  collectionId: string;
  link: Link;
  onSaved: () => void;
}) {
  const [url, setUrl] = useState(link.destinationUrl);
  const [code, setCode] = useState(link.code);
  const [title, setTitle] = useState(link.title ?? '');
  const [tags, setTags] = useState(link.tags.join(', '));
  const [expiresAt, setExpiresAt] = useState(link.expiresAt ?? '');
  const [track, setTrack] = useState(link.trackConversions);
  const [error, setError] = useState<unknown>();
  const [saved, setSaved] = useState(false);
  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setSaved(false);
    // Only what changed: a PATCH of the same code would still be checked against every other link.
    const body: Schemas['UpdateLinkBody'] = {};
    if (url.trim() !== link.destinationUrl) body.url = url.trim();
    if (code.trim() !== link.code) body.code = code.trim();
    if ((title.trim() || null) !== link.title) body.title = title.trim() || null;
    if (tagsFrom(tags).join(',') !== link.tags.join(',')) body.tags = tagsFrom(tags);
    if ((expiresAt.trim() || null) !== link.expiresAt) body.expiresAt = expiresAt.trim() || null;
    if (track !== link.trackConversions) body.trackConversions = track;
    if (Object.keys(body).length === 0) return setSaved(true);
    try {
      await api.PATCH('/admin/collection/{collectionId}/links/{linkId}', {
        params: { path: { collectionId, linkId: link.id } },
        body,
      });
      setSaved(true);
      onSaved();
    } catch (err) {
      setError(err);
    }
  };
  return (
    <section aria-labelledby="edit-link">
      <h2 id="edit-link">Edit</h2>
      <form class="grid" onSubmit={submit}>
        <label>
          Destination
          <input name="url" type="url" required value={url} onInput={(e) => setUrl(e.currentTarget.value)} />
        </label>
        <label>
          Code
          <input name="code" required maxLength={64} value={code} onInput={(e) => setCode(e.currentTarget.value)} />
        </label>
        <label>
          Title
          <input name="title" maxLength={300} value={title} onInput={(e) => setTitle(e.currentTarget.value)} />
        </label>
        <label>
          Tags (comma-separated)
          <input name="tags" value={tags} onInput={(e) => setTags(e.currentTarget.value)} />
        </label>
        <label>
          Expires (ISO date or date-time; empty: never)
          <input
            name="expiresAt"
            maxLength={64}
            placeholder="2026-12-31"
            value={expiresAt}
            onInput={(e) => setExpiresAt(e.currentTarget.value)}
          />
        </label>
        <label class="check">
          <input
            name="trackConversions"
            type="checkbox"
            checked={track}
            onChange={(e) => setTrack(e.currentTarget.checked)}
          />
          Track conversions
        </label>
        <button type="submit">Save</button>
      </form>
      <ErrorNote error={error} doing="save the link" />
      {saved ? (
        <p class="notice" role="status">
          Saved.
        </p>
      ) : null}
      {link.tags.length ? <p class="meta">Tags: {link.tags.join(', ')}</p> : null}
      <p class="meta">Last changed {when(link.updatedAt)}.</p>
    </section>
  );
}
