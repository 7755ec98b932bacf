/**
 * What every page is made of: loading, empty and error states in words (never a blank
 * page), tables, bars drawn in table cells, and each chart with its data as a table.
 */
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ServiceError } from '../../clients/typescript/src/index.ts';
import { hrefOf, onLinkClick } from './router.ts';

export interface Async<T> {
  data: T | undefined;
  error: unknown;
  loading: boolean;
  /** Loads again; `quiet` keeps what is shown while it does (polling). */
  reload: (quiet?: boolean) => void;
}

/**
 * Runs `load` now and whenever `deps` change; an answer that arrives after a newer call
 * started is dropped, so a slow request never overwrites a newer one.
 */
export function useAsync<T>(load: () => Promise<T>, deps: unknown[]): Async<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const generation = useRef(0);
  // The caller names what `load` depends on (`deps`), as for useEffect.
  const run = useCallback((quiet = false) => {
    const mine = ++generation.current;
    if (!quiet) setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => mine === generation.current && setState({ data, loading: false }),
      (error: unknown) => mine === generation.current && setState((s) => ({ data: s.data, error, loading: false })),
    );
  }, deps);
  useEffect(() => run(), [run]);
  return { data: state.data, error: state.error, loading: state.loading, reload: run };
}

/** Calls `tick` every `ms` while `active`, and not while the tab is hidden. */
export function usePolling(active: boolean, ms: number, tick: () => void): void {
  const latest = useRef(tick);
  latest.current = tick;
  useEffect(() => {
    if (!active) return;
    const id = setInterval(() => {
      if (document.visibilityState === 'visible') latest.current();
    }, ms);
    return () => clearInterval(id);
  }, [active, ms]);
}

/** An error in words: the service's message, its code and the request id to quote. */
export function ErrorNote({ error, doing }: { error: unknown; doing?: string }) {
  if (!error) return null;
  const lead = doing ? `Could not ${doing}: ` : '';
  if (error instanceof ServiceError) {
    return (
      <div class="error" role="alert">
        <p>
          {lead}
          {error.message}
          {fieldErrors(error)}
        </p>
        <p class="meta">
          {error.status} {error.errorCode}
          {error.requestId ? (
            <>
              {' · request id '}
              <code class="request-id">{error.requestId}</code>
            </>
          ) : null}
        </p>
      </div>
    );
  }
  const message = error instanceof Error ? error.message : String(error);
  return (
    <div class="error" role="alert">
      <p>
        {lead}
        {error instanceof TypeError ? `the service could not be reached (${message})` : message}
      </p>
    </div>
  );
}

/**
 * What a request's validation names (`details.errors` of a 400 VALIDATION_FAILED, e.g.
 * `body.cron must NOT have fewer than 9 characters`): the message alone says only that it failed.
 */
function fieldErrors(error: ServiceError): string {
  const errors = error.details?.errors;
  if (!Array.isArray(errors)) return '';
  const said = errors
    .filter(
      (e): e is { path: string; message: string } => typeof e?.path === 'string' && typeof e?.message === 'string',
    )
    .map((e) => `${e.path} ${e.message}`);
  return said.length ? `: ${said.join('; ')}` : '';
}

export const Loading = ({ what }: { what: string }) => (
  <p class="status" role="status">
    Loading {what}…
  </p>
);

export const Empty = ({ children }: { children: ComponentChildren }) => <p class="empty">{children}</p>;

/** An in-app link: a real address (open in a new tab works), followed without a reload. */
export function A({
  route,
  children,
  current,
}: {
  route: string;
  children: ComponentChildren;
  /** This link names the page shown (navigation). */
  current?: boolean;
}) {
  return (
    <a
      href={hrefOf(route)}
      aria-current={current ? 'page' : undefined}
      onClick={(e) => onLinkClick(e as unknown as MouseEvent, route)}
    >
      {children}
    </a>
  );
}

export interface Column<T> {
  label: string;
  value: (row: T) => ComponentChildren;
  numeric?: boolean;
}

export function DataTable<T>({
  caption,
  columns,
  rows,
  rowKey,
  class: className,
}: {
  caption?: string;
  columns: Column<T>[];
  rows: T[];
  rowKey: (row: T, index: number) => string | number;
  class?: string;
}) {
  return (
    <div class="table-wrap">
      <table class={className}>
        {caption ? <caption>{caption}</caption> : null}
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col" class={c.numeric ? 'num' : undefined}>
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {rows.map((r, i) => (
            <tr key={rowKey(r, i)}>
              {columns.map((c) => (
                <td key={c.label} class={c.numeric ? 'num' : undefined}>
                  {c.value(r)}
                </td>
              ))}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/**
 * A chart and the same numbers as a table, for screen readers and for reading exact values.
 * The canvas is decorative to assistive technology (aria-hidden); the table carries the data.
 */
export function Figure({ title, chart, table }: { title: string; chart: ComponentChildren; table: ComponentChildren }) {
  return (
    <figure class="chart-figure">
      <figcaption>{title}</figcaption>
      {chart}
      <details class="chart-table">
        <summary>{title}: the data as a table</summary>
        {table}
      </details>
    </figure>
  );
}

export const percent = (x: number) => `${(Math.round(x * 1000) / 10).toLocaleString('en')} %`;

export function when(iso: string | null | undefined): string {
  if (!iso) return '—';
  const d = new Date(iso);
  return Number.isNaN(d.getTime())
    ? iso
    : d
        .toISOString()
        .replace('T', ' ')
        .replace(/\.\d+Z$/, ' UTC');
}

export function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '—';
  if (seconds < 90) return `${Math.round(seconds)} s`;
  if (seconds < 5400) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 360) / 10} h`;
  return `${Math.round(seconds / 8640) / 10} days`;
}

/** A date as `YYYY-MM-DD` (UTC), for date inputs and window bounds. */
/** A window form's From and To (included) day pickers (the cases and journeys pages). */
export function DayRangeFields({
  from,
  to,
  onFrom,
  onTo,
}: {
  from: string;
  to: string;
  onFrom: (value: string) => void;
  onTo: (value: string) => void;
}) {
  return (
    <>
      <label>
        From
        <input name="from" type="date" required value={from} onInput={(e) => onFrom(e.currentTarget.value)} />
      </label>
      <label>
        To (included)
        <input name="to" type="date" required value={to} onInput={(e) => onTo(e.currentTarget.value)} />
      </label>
    </>
  );
}

export const day = (d: Date) => d.toISOString().slice(0, 10);
export const daysAgo = (n: number) => day(new Date(Date.now() - n * 86_400_000));

export const json = (v: unknown) => JSON.stringify(v, null, 2);

/**
 * Offers a file fetched with the key (a QR code, an export) as a download: the admin API needs
 * the console's credential, so the browser cannot follow a plain link to it.
 */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  // After the click has been handled: the download has its own copy.
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * A button that copies `text` to the clipboard and says so. The Clipboard API needs a secure
 * context (https, or localhost); elsewhere the button says to select the text instead.
 */
export function CopyButton({ text, what }: { text: string; what: string }) {
  const [said, setSaid] = useState<string>();
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(text);
      setSaid('Copied');
    } catch {
      setSaid('Select and copy it');
    }
    setTimeout(() => setSaid(undefined), 2000);
  };
  return (
    <button type="button" class="copy" onClick={copy} aria-label={`Copy ${what}`}>
      {said ?? 'Copy'}
    </button>
  );
}

/** A description as the service writes it: names between backticks shown as `code`, as the docs do. */
export const withCode = (text: string) =>
  text.split('`').map((part, i) => (i % 2 ? <code key={i}>{part}</code> : part));

/**
 * Delete, asked twice in the page (no `window.confirm`): the first click asks "Delete …?" with
 * **Yes, delete** and **No** beside it; only Yes calls `onConfirm`.
 */
export function ConfirmDelete({ what, onConfirm }: { what: string; onConfirm: () => void }) {
  const [asking, setAsking] = useState(false);
  if (!asking) {
    return (
      <button type="button" onClick={() => setAsking(true)} aria-label={`Delete ${what}`}>
        Delete
      </button>
    );
  }
  return (
    <span class="confirm">
      <span>Delete?</span>
      <button
        type="button"
        class="danger"
        onClick={() => {
          setAsking(false);
          onConfirm();
        }}
        aria-label={`Yes, delete ${what}`}
      >
        Yes, delete
      </button>
      <button type="button" onClick={() => setAsking(false)} aria-label={`No, keep ${what}`}>
        No
      </button>
    </span>
  );
}
