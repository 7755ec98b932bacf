/**
 * A funnel's options as form fields (issue 29; docs/journeys.md "Funnel options"): whose
 * funnel (userId or contactId), the conversion window, the ordering, exclusions and the
 * breakdown; and the request fields they make. The page keeps two copies: the one being typed
 * and the one shown, so nothing is asked of the service until **Show**.
 */
import type { Schemas } from '../../../clients/typescript/src/index.ts';

type ReportRequest = Schemas['JourneyFunnelReportRequest'];
export type WindowUnit = NonNullable<ReportRequest['conversionWindow']>['unit'];
export type Ordering = NonNullable<ReportRequest['ordering']>;
export type IdField = NonNullable<ReportRequest['idField']>;

export interface Exclusion {
  interactionId: string;
  outcome: string;
  fromStepId: string;
  toStepId: string;
}

export interface FunnelSettings {
  idField: IdField;
  /** Empty: no conversion window. */
  windowValue: string;
  windowUnit: WindowUnit;
  ordering: Ordering;
  exclusions: Exclusion[];
  /** Empty: no breakdown; `metadata` takes `metadataKey`. */
  property: string;
  metadataKey: string;
  attribution: 'first' | 'last';
  limit: number;
}

export const DEFAULT_SETTINGS: FunnelSettings = {
  idField: 'userId',
  windowValue: '',
  windowUnit: 'day',
  ordering: 'ordered',
  exclusions: [],
  property: '',
  metadataKey: '',
  attribution: 'first',
  limit: 10,
};

export type OptionFields = Pick<
  ReportRequest,
  'idField' | 'conversionWindow' | 'ordering' | 'exclusions' | 'breakdown'
>;

/**
 * The request's option fields. `ordering` is always sent, even at its default: any option
 * takes the report to the options' path, the one that answers the median, the 90th percentile
 * and the histogram of the time to convert (the plain path answers the average only). Its
 * counts are the plain path's when nothing else is asked.
 */
export function optionFields(s: FunnelSettings): OptionFields {
  const fields: OptionFields = { idField: s.idField, ordering: s.ordering };
  const value = Number(s.windowValue);
  if (s.windowValue !== '' && Number.isInteger(value) && value > 0) {
    fields.conversionWindow = { value, unit: s.windowUnit };
  }
  // Exclusions have no "between" in an unordered funnel (the service refuses them there).
  const exclusions = s.exclusions.filter((x) => x.interactionId.trim() !== '');
  if (exclusions.length > 0 && s.ordering !== 'unordered') {
    fields.exclusions = exclusions.map((x) => ({
      interactionId: x.interactionId.trim(),
      fromStepId: x.fromStepId,
      toStepId: x.toStepId,
      ...(x.outcome.trim() ? { outcome: x.outcome.trim() } : {}),
    }));
  }
  const property = breakdownProperty(s);
  if (property) fields.breakdown = { property, attribution: s.attribution, limit: s.limit };
  return fields;
}

/** Trends take every option but the breakdown. */
export function trendFields(s: FunnelSettings): Omit<OptionFields, 'breakdown'> {
  const { breakdown: _, ...rest } = optionFields(s);
  return rest;
}

export const breakdownProperty = (s: FunnelSettings) =>
  s.property === 'metadata' ? (s.metadataKey.trim() ? `metadata.${s.metadataKey.trim()}` : '') : s.property;

const PROPERTIES: [string, string][] = [
  ['appId', 'app'],
  ['outcome', 'outcome'],
  ['source', 'source'],
  ['interactionId', 'interaction'],
  ['metadata', 'a metadata key'],
];
const LINK_PROPERTIES: [string, string][] = [
  ['country', 'the click’s country'],
  ['deviceType', 'the click’s device'],
];

export function OptionsFields({
  value: s,
  onChange,
  stepIds,
  fromLink,
}: {
  value: FunnelSettings;
  onChange: (next: FunnelSettings) => void;
  stepIds: string[];
  /** The funnel starts with a link's clicks: country and device are offered. */
  fromLink: boolean;
}) {
  const set = (patch: Partial<FunnelSettings>) => onChange({ ...s, ...patch });
  return (
    <>
      <label>
        Identity
        <select name="idField" value={s.idField} onChange={(e) => set({ idField: e.currentTarget.value as IdField })}>
          <option value="userId">userId</option>
          <option value="contactId">contactId</option>
        </select>
      </label>
      <label>
        Ordering
        <select
          name="ordering"
          value={s.ordering}
          onChange={(e) => set({ ordering: e.currentTarget.value as Ordering })}
        >
          <option value="ordered">ordered (other events between allowed)</option>
          <option value="strict">strict (each step the very next)</option>
          <option value="unordered">unordered (any order)</option>
        </select>
      </label>
      <fieldset class="window">
        <legend>Conversion window</legend>
        <label>
          Within
          <input
            name="windowValue"
            type="number"
            min={1}
            step={1}
            placeholder="any time"
            value={s.windowValue}
            onInput={(e) => set({ windowValue: e.currentTarget.value })}
          />
        </label>
        <label>
          Unit
          <select
            name="windowUnit"
            value={s.windowUnit}
            onChange={(e) => set({ windowUnit: e.currentTarget.value as WindowUnit })}
          >
            <option value="minute">minutes</option>
            <option value="hour">hours</option>
            <option value="day">days</option>
            <option value="week">weeks</option>
          </select>
        </label>
      </fieldset>
      <fieldset class="breakdown">
        <legend>Breakdown</legend>
        <label>
          By
          <select name="breakdown" value={s.property} onChange={(e) => set({ property: e.currentTarget.value })}>
            <option value="">nothing</option>
            {[...PROPERTIES, ...(fromLink ? LINK_PROPERTIES : [])].map(([v, l]) => (
              <option key={v} value={v}>
                {l}
              </option>
            ))}
          </select>
        </label>
        {s.property === 'metadata' ? (
          <label>
            Metadata key
            <input
              name="metadataKey"
              required
              maxLength={110}
              value={s.metadataKey}
              onInput={(e) => set({ metadataKey: e.currentTarget.value })}
            />
          </label>
        ) : null}
        <label>
          Touch
          <select
            name="attribution"
            value={s.attribution}
            disabled={s.property === ''}
            onChange={(e) => set({ attribution: e.currentTarget.value as 'first' | 'last' })}
          >
            <option value="first">first (the entry)</option>
            <option value="last">last (the last step done)</option>
          </select>
        </label>
        <label>
          Top
          <input
            name="limit"
            type="number"
            min={1}
            max={50}
            disabled={s.property === ''}
            value={s.limit}
            onInput={(e) => set({ limit: Math.min(50, Math.max(1, Number(e.currentTarget.value) || 10)) })}
          />
        </label>
      </fieldset>
      <Exclusions value={s} onChange={(exclusions) => set({ exclusions })} stepIds={stepIds} />
    </>
  );
}

/** Exclusions: an interaction (and outcome) that, done between two steps, removes the recipient from there on. */
function Exclusions({
  value: s,
  onChange,
  stepIds,
}: {
  value: FunnelSettings;
  onChange: (next: Exclusion[]) => void;
  stepIds: string[];
}) {
  const list = s.exclusions;
  const put = (i: number, patch: Partial<Exclusion>) =>
    onChange(list.map((x, j) => (j === i ? { ...x, ...patch } : x)));
  const canAdd = stepIds.length >= 2 && list.length < 10 && s.ordering !== 'unordered';
  return (
    <fieldset class="exclusions wide">
      <legend>Exclusions</legend>
      {s.ordering === 'unordered' ? (
        <p class="meta">An unordered funnel has no “between two steps”: exclusions are not applied.</p>
      ) : null}
      {stepIds.length < 2 ? <p class="meta">Exclusions need two steps.</p> : null}
      {list.map((x, i) => (
        // Rows are only added at the end and removed by position: the index is their identity.
        <fieldset class="exclusion" key={i} aria-label={`Exclusion ${i + 1}`}>
          <label>
            Interaction
            <input
              name={`exclusion${i}.interactionId`}
              list="funnel-interactions"
              required
              value={x.interactionId}
              onInput={(e) => put(i, { interactionId: e.currentTarget.value })}
            />
          </label>
          <label>
            Outcome
            <input
              name={`exclusion${i}.outcome`}
              placeholder="any"
              value={x.outcome}
              onInput={(e) => put(i, { outcome: e.currentTarget.value })}
            />
          </label>
          <label>
            After step
            <select value={x.fromStepId} onChange={(e) => put(i, { fromStepId: e.currentTarget.value })}>
              {stepIds.slice(0, -1).map((id) => (
                <option key={id} value={id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
          <label>
            Before step
            <select value={x.toStepId} onChange={(e) => put(i, { toStepId: e.currentTarget.value })}>
              {stepIds.slice(1).map((id) => (
                <option key={id} value={id}>
                  {id}
                </option>
              ))}
            </select>
          </label>
          <button type="button" onClick={() => onChange(list.filter((_, j) => j !== i))}>
            Remove
          </button>
        </fieldset>
      ))}
      <button
        type="button"
        disabled={!canAdd}
        onClick={() =>
          onChange([
            ...list,
            { interactionId: '', outcome: '', fromStepId: stepIds[0], toStepId: stepIds.at(-1) ?? '' },
          ])
        }
      >
        Add an exclusion
      </button>
    </fieldset>
  );
}
