/**
 * A link's conversions in the console: interaction events that carried one of its click ids
 * (a link with `trackConversions` appends `pl_cid` to its destination; the app sends it back
 * with its events), by interaction and outcome, over the last 30 days.
 */
import type { ServiceClient } from '../../../clients/typescript/src/index.ts';
import { DataTable, Empty, ErrorNote, Loading, useAsync } from '../ui.tsx';

export function ConversionsPanel({
  api,
  collectionId,
  linkId,
  tracking,
}: {
  api: ServiceClient;
  collectionId: string;
  linkId: string;
  /** Whether the link appends click ids now (conversions from earlier stay countable). */
  tracking: boolean;
}) {
  const conversions = useAsync(
    () =>
      api.GET('/admin/collection/{collectionId}/links/{linkId}/conversions', {
        params: { path: { collectionId, linkId } },
      }),
    [api, collectionId, linkId],
  );
  const data = conversions.data;
  return (
    <section aria-labelledby="conversions-title">
      <h2 id="conversions-title">Conversions</h2>
      {tracking ? null : (
        <p class="meta">
          This link does not track conversions: turn on <strong>Track conversions</strong> below, and the redirect gives
          each visit a click id (<code>pl_cid</code>) for the app to send back with its events.
        </p>
      )}
      <ErrorNote error={conversions.error} doing="count the conversions" />
      {conversions.loading && !data ? <Loading what="conversions" /> : null}
      {data && data.items.length === 0 ? <Empty>No event has carried a click id of this link yet.</Empty> : null}
      {data && data.items.length > 0 ? (
        <DataTable
          caption={`Events carrying a click id of this link, last 30 days (${data.total})`}
          rows={data.items}
          rowKey={(c) => `${c.interactionId}/${c.outcome ?? ''}`}
          columns={[
            { label: 'Interaction', value: (c) => <code>{c.interactionId}</code> },
            { label: 'Outcome', value: (c) => c.outcome ?? '(none)' },
            { label: 'Events', value: (c) => c.count, numeric: true },
            { label: 'Clicks converted', value: (c) => c.clicks, numeric: true },
          ]}
        />
      ) : null}
    </section>
  );
}
