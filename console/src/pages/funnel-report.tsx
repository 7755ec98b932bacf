/**
 * A journey's funnel under the options shown (funnel-options.tsx): the bars with their
 * conversion, the steps as a table (times to convert included), the breakdown's groups, the
 * time-to-convert histogram, the trend, and the people of a step (funnel-people.tsx).
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import { DataTable, duration, Empty, ErrorNote, Loading, percent, useAsync } from '../ui.tsx';
import { FunnelBars, TimeToConvert } from './funnel-charts.tsx';
import { type FunnelSettings, optionFields } from './funnel-options.tsx';
import { People, type PeopleOf } from './funnel-people.tsx';
import { Trends } from './funnel-trends.tsx';

export type FunnelStep = Schemas['JourneyFunnelReportResponse']['steps'][number];
export type BreakdownGroup = NonNullable<Schemas['JourneyFunnelReportResponse']['breakdown']>[number];

/** What every call about the funnel shown shares. */
export interface FunnelScope {
  api: ServiceClient;
  collectionId: string;
  journeyId: string;
  /** The period's days, `to` included (a date alone as the period's end includes that day). */
  from: string;
  to: string;
  settings: FunnelSettings;
}

export const count = (n: number) => n.toLocaleString('en');
/** A breakdown value as read: the other values together, or a missing one. */
export const groupName = (g: Pick<BreakdownGroup, 'value' | 'other'>) =>
  g.other ? 'other values' : g.value === null ? '(none)' : g.value;

/** Whether a breakdown group is the one a people request names. */
const sameGroup = (g: BreakdownGroup, of: PeopleOf) =>
  of.group !== undefined && ('other' in of.group ? g.other === true : !g.other && g.value === of.group.value);

export function FunnelReport(props: FunnelScope & { name: string; fromLink: boolean }) {
  const { api, collectionId, journeyId, name, from, to, settings, fromLink } = props;
  const report = useAsync(
    () =>
      api.POST('/admin/collection/{collectionId}/journeys.analytics/{journeyId}/funnel-report', {
        params: { path: { collectionId, journeyId } },
        // [] counts the journey's own steps and mappings (data.steps).
        body: { stepMappings: [], periodStart: from, periodEnd: to, ...optionFields(settings) },
      }),
    [api, collectionId, journeyId, from, to, settings],
  );
  const [peopleOf, setPeopleOf] = useState<PeopleOf>();
  const steps = report.data?.steps ?? [];
  const groups = report.data?.breakdown;
  const first = steps[0]?.enteredCount ?? 0;
  const last = steps.at(-1)?.completedCount ?? 0;
  const scope = { api, collectionId, journeyId, from, to, settings };
  // People are not answered for a funnel from a link's clicks: its recipients are clicks.
  const onPeople = fromLink ? undefined : setPeopleOf;
  return (
    <section aria-labelledby="funnel-title">
      <h2 id="funnel-title">Funnel of {name}</h2>
      <ErrorNote error={report.error} doing="count the funnel" />
      {report.loading && !report.data ? <Loading what="the funnel" /> : null}
      {report.data && steps.length === 0 ? <Empty>This journey has no steps to count.</Empty> : null}
      {report.data && steps.length > 0 ? (
        <>
          <p class="total">
            <strong>{count(first)}</strong> entered from {from} to {to} (included); <strong>{count(last)}</strong>{' '}
            completed the last step: {percent(first ? last / first : 0)} overall.
          </p>
          <FunnelBars steps={steps} />
          <StepsTable steps={steps} first={first} onPeople={onPeople} />
          {groups ? <Breakdown groups={groups} steps={steps} onPeople={onPeople} /> : null}
          <TimeToConvert steps={steps} />
          <Trends {...scope} />
          {fromLink ? (
            <p class="meta">
              People are not listed for a funnel from a link’s clicks: its recipients are clicks, not users.
            </p>
          ) : null}
          {peopleOf ? (
            <People
              key={JSON.stringify(peopleOf)}
              {...scope}
              of={peopleOf}
              steps={(peopleOf.group && groups?.find((g) => sameGroup(g, peopleOf))?.steps) || steps}
            />
          ) : null}
        </>
      ) : null}
    </section>
  );
}

function StepsTable({
  steps,
  first,
  onPeople,
}: {
  steps: FunnelStep[];
  first: number;
  onPeople?: (of: PeopleOf) => void;
}) {
  return (
    <DataTable<FunnelStep>
      caption="Steps"
      class="funnel"
      rows={steps}
      rowKey={(s) => s.stepId}
      columns={[
        { label: 'Step', value: (s) => s.stepId },
        { label: 'Completes on', value: (s) => `${s.interactionId} · ${s.outcome}` },
        { label: 'Entered', value: (s) => count(s.enteredCount), numeric: true },
        { label: 'Completed', value: (s) => count(s.completedCount), numeric: true },
        { label: 'Conversion', value: (s) => percent(s.conversionRate), numeric: true },
        { label: 'Of all who entered', value: (s) => percent(first ? s.completedCount / first : 0), numeric: true },
        { label: 'Average time to complete', value: (s) => duration(s.avgTimeToComplete), numeric: true },
        { label: 'Median', value: (s) => duration(s.medianTimeToComplete), numeric: true },
        { label: '90th percentile', value: (s) => duration(s.p90TimeToComplete), numeric: true },
        ...(onPeople
          ? [
              {
                label: 'People',
                value: (s: FunnelStep) => (
                  <button type="button" onClick={() => onPeople({ stepId: s.stepId })}>
                    People of {s.stepId}
                  </button>
                ),
              },
            ]
          : []),
      ]}
    />
  );
}

/**
 * The breakdown's groups, one row each: how many entered, how many completed each step (and
 * the share of the group's entries), and the group's conversion drawn as a bar.
 */
function Breakdown({
  groups,
  steps,
  onPeople,
}: {
  groups: BreakdownGroup[];
  steps: FunnelStep[];
  onPeople?: (of: PeopleOf) => void;
}) {
  const lastOf = (g: BreakdownGroup) => g.steps.at(-1)?.completedCount ?? 0;
  const enteredOf = (g: BreakdownGroup) => g.steps[0]?.enteredCount ?? 0;
  const rate = (g: BreakdownGroup) => (enteredOf(g) ? lastOf(g) / enteredOf(g) : 0);
  return (
    <section aria-labelledby="breakdown-title">
      <h3 id="breakdown-title">Breakdown</h3>
      {groups.length === 0 ? <Empty>Nobody entered, so there is nothing to break down.</Empty> : null}
      {groups.length > 0 ? (
        <DataTable<BreakdownGroup>
          caption="Funnel by breakdown value"
          class="bars breakdown"
          rows={groups}
          rowKey={(g) => (g.other ? '\u0000other' : `${g.value}`)}
          columns={[
            {
              label: 'Value',
              value: (g) => (g.other || g.value === null ? <em>{groupName(g)}</em> : g.value),
            },
            { label: 'Entered', value: (g) => count(enteredOf(g)), numeric: true },
            ...steps.map((s, k) => ({
              label: s.stepId,
              numeric: true,
              value: (g: BreakdownGroup) => {
                const done = g.steps[k]?.completedCount ?? 0;
                return `${count(done)} (${percent(enteredOf(g) ? done / enteredOf(g) : 0)})`;
              },
            })),
            { label: 'Conversion', value: (g) => percent(rate(g)), numeric: true },
            ...(onPeople
              ? [
                  {
                    label: 'People',
                    value: (g: BreakdownGroup) => (
                      <button
                        type="button"
                        onClick={() =>
                          onPeople({
                            stepId: steps[0].stepId,
                            group: g.other ? { other: true } : { value: g.value },
                          })
                        }
                      >
                        People of {groupName(g)}
                      </button>
                    ),
                  },
                ]
              : []),
            // Last: a table of bars gives its last column the room (style.css, table.bars).
            {
              label: 'Bar',
              value: (g) => <span class="bar" aria-hidden="true" style={{ width: `${100 * rate(g)}%` }} />,
            },
          ]}
        />
      ) : null}
    </section>
  );
}
