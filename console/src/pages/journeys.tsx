/**
 * Journeys: pick a journey, a period and the funnel's options (window, ordering, exclusions,
 * breakdown); its funnel as bars with the conversion on them, the steps' times to convert,
 * the breakdown's groups, the trend against the previous period, and the people at a step
 * with their events (funnel-*.tsx). What is typed is asked for only on **Show**.
 */
import { useState } from 'preact/hooks';
import type { PageProps } from '../main.tsx';
import { DayRangeFields, daysAgo, Empty, ErrorNote, Loading, useAsync } from '../ui.tsx';
import { DEFAULT_SETTINGS, type FunnelSettings, OptionsFields } from './funnel-options.tsx';
import { FunnelReport } from './funnel-report.tsx';

/** A journey's step ids in order (`data.steps[].id`, or `stepId` as the original names it). */
function stepIdsOf(steps: Record<string, unknown>[] | undefined): string[] {
  return (steps ?? []).map((s) => String(s.id ?? s.stepId ?? '')).filter((id) => id !== '');
}

/** Whether the journey's first step is a link's clicks (`link:<linkId>`): its recipients are clicks. */
function startsFromLink(steps: Record<string, unknown>[] | undefined): boolean {
  const config = steps?.[0]?.config as { interactionId?: unknown } | undefined;
  return typeof config?.interactionId === 'string' && config.interactionId.startsWith('link:');
}

export default function JourneysPage({ api, collectionId }: PageProps) {
  const path = { collectionId };
  const journeys = useAsync(
    () => api.GET('/admin/collection/{collectionId}/journeys', { params: { path, query: { limit: 100 } } }),
    [api, collectionId],
  );
  // Offered in the exclusions' interaction field (any id may be typed).
  const interactions = useAsync(
    () => api.GET('/admin/collection/{collectionId}/interactions', { params: { path, query: { limit: 500 } } }),
    [api, collectionId],
  );
  const [picked, setPicked] = useState('');
  const [from, setFrom] = useState(daysAgo(30));
  const [to, setTo] = useState(daysAgo(0));
  const [draft, setDraft] = useState<FunnelSettings>(DEFAULT_SETTINGS);
  const [shown, setShown] = useState({ journeyId: '', from, to, settings: DEFAULT_SETTINGS });
  const journeyId = picked || journeys.data?.items[0]?.id || '';
  const journey = journeys.data?.items.find((j) => j.id === journeyId);
  const stepIds = stepIdsOf(journey?.steps);
  const fromLink = startsFromLink(journey?.steps);
  // Until Show is pressed, the first journey is shown with the defaults.
  const showing = journeys.data?.items.find((j) => j.id === (shown.journeyId || journeyId));

  return (
    <>
      <h1>Journeys</h1>
      <ErrorNote error={journeys.error} doing="list the journeys" />
      {journeys.loading && !journeys.data ? <Loading what="journeys" /> : null}
      {journeys.data && journeys.data.items.length === 0 ? (
        <Empty>
          No journeys yet. A journey is created with <code>POST /admin/collection/{collectionId}/journeys</code>; its
          funnel is then counted from interaction events (docs/journeys.md).
        </Empty>
      ) : null}
      {journeys.data && journeys.data.items.length > 0 ? (
        <form
          class="grid funnel-options"
          aria-label="Funnel"
          onSubmit={(e) => {
            e.preventDefault();
            setShown({ journeyId, from, to, settings: draft });
          }}
        >
          <label>
            Journey
            <select
              name="journey"
              value={journeyId}
              onChange={(e) => {
                setPicked(e.currentTarget.value);
                // Exclusions name the steps of the journey they were made for.
                setDraft({ ...draft, exclusions: [] });
              }}
            >
              {journeys.data.items.map((j) => (
                <option key={j.id} value={j.id}>
                  {j.name}
                  {j.active ? '' : ' (inactive)'}
                </option>
              ))}
            </select>
          </label>
          <DayRangeFields from={from} to={to} onFrom={setFrom} onTo={setTo} />
          <OptionsFields value={draft} onChange={setDraft} stepIds={stepIds} fromLink={fromLink} />
          <datalist id="funnel-interactions">
            {(interactions.data?.items ?? []).map((t) => (
              <option key={t.id} value={t.id} />
            ))}
          </datalist>
          <button type="submit">Show</button>
        </form>
      ) : null}
      {showing ? (
        <FunnelReport
          key={`${showing.id} ${shown.from} ${shown.to} ${JSON.stringify(shown.settings)}`}
          api={api}
          collectionId={collectionId}
          journeyId={showing.id}
          name={showing.name}
          from={shown.from}
          to={shown.to}
          settings={shown.settings}
          fromLink={startsFromLink(showing.steps)}
        />
      ) : null}
    </>
  );
}
