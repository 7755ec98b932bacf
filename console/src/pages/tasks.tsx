/**
 * Tasks: what `POST .../async/jobs` takes. The app's own tasks (declared, run by the app's
 * workers over HTTP) with their settings, payload template and a worker snippet to copy;
 * declared, changed (declared again) or deleted here. Then the service's own tasks, read-only.
 */
import { useState } from 'preact/hooks';
import type { Schemas, ServiceClient } from '../../../clients/typescript/src/index.ts';
import type { PageProps } from '../main.tsx';
import { apiBaseUrl } from '../session.ts';
import { ConfirmDelete, CopyButton, DataTable, Empty, ErrorNote, json, Loading, useAsync, withCode } from '../ui.tsx';

type AppTask = Schemas['AppTask'];
type JobTask = Schemas['JobTask'];

/** The declare form's fields as typed (numbers and JSON as text; empty: the service's default). */
interface Draft {
  name: string;
  description: string;
  maxAttempts: string;
  leaseSeconds: string;
  payloadSchema: string;
  example: string;
}
const BLANK: Draft = { name: '', description: '', maxAttempts: '', leaseSeconds: '', payloadSchema: '', example: '' };

/** The typed client's worker for one task, as a person would start from it. */
function workerSnippet(collectionId: string, task: string): string {
  const base = apiBaseUrl().replace(/\/$/, '');
  return `import { runWorker } from '@collection-platform/client';

const worker = runWorker({
  baseUrl: ${JSON.stringify(base)},
  apiKey: process.env.API_KEY,
  collectionId: ${JSON.stringify(collectionId)},
  tasks: [${JSON.stringify(task)}],
  handler: async (job, { progress }) => {
    const payload = job.payload; // checked against the task's schema when enqueued
    // … the work; throw to fail the attempt (it is retried)
    return { ok: true }; // the job's result
  },
});
process.on('SIGTERM', () => void worker.stop());`;
}

export default function TasksPage({ api, collectionId }: PageProps) {
  const path = { collectionId };
  const own = useAsync(
    () => api.GET('/admin/collection/{collectionId}/tasks', { params: { path } }),
    [api, collectionId],
  );
  const all = useAsync(
    () => api.GET('/admin/collection/{collectionId}/job-tasks', { params: { path } }),
    [api, collectionId],
  );
  const [draft, setDraft] = useState<Draft>(BLANK);
  const [actionError, setActionError] = useState<unknown>();
  const [notice, setNotice] = useState<string>();

  const remove = async (t: AppTask) => {
    setActionError(undefined);
    setNotice(undefined);
    try {
      await api.DELETE('/admin/collection/{collectionId}/tasks/{name}', {
        params: { path: { collectionId, name: t.name } },
      });
      setNotice(`Task ${t.name} is deleted: new jobs of it are refused; its jobs stay in the list.`);
    } catch (err) {
      setActionError(err);
    }
    own.reload(true);
  };
  const change = (t: AppTask) => {
    setDraft({
      name: t.name,
      description: t.description,
      maxAttempts: String(t.maxAttempts),
      leaseSeconds: String(t.leaseSeconds),
      payloadSchema: t.payloadSchema == null ? '' : json(t.payloadSchema),
      example: t.example == null ? '' : json(t.example),
    });
    document.getElementById('declare-task')?.scrollIntoView();
  };

  const items = own.data?.items ?? [];
  const service = (all.data?.items ?? []).filter((t) => (t.source ?? 'service') === 'service');
  return (
    <>
      <h1>Tasks</h1>
      <p class="meta">
        The tasks a job can be enqueued for (<code>POST .../async/jobs</code>, a schedule): the app’s own, declared here
        and run by the app’s workers, which lease their jobs over HTTP; and the service’s, which it runs itself.
      </p>
      <section aria-labelledby="app-tasks">
        <h2 id="app-tasks">The app’s tasks</h2>
        <ErrorNote error={own.error} doing="list the app’s tasks" />
        <ErrorNote error={actionError} doing="delete the task" />
        {notice ? (
          <p class="notice" role="status">
            {notice}
          </p>
        ) : null}
        {own.loading && !own.data ? <Loading what="the app’s tasks" /> : null}
        {own.data && items.length === 0 ? (
          <Empty>No tasks of the app’s own yet: declare one below, then run a worker for it.</Empty>
        ) : null}
        {items.length > 0 ? (
          <DataTable<AppTask>
            caption="The app’s tasks, by name"
            class="app-tasks"
            rows={items}
            rowKey={(t) => t.name}
            columns={[
              { label: 'Name', value: (t) => <code>{t.name}</code> },
              { label: 'Description', value: (t) => t.description || '—' },
              { label: 'Max attempts', value: (t) => t.maxAttempts, numeric: true },
              { label: 'Lease', value: (t) => `${t.leaseSeconds} s`, numeric: true },
              { label: 'Payload template', value: (t) => <Template example={t.example} schema={t.payloadSchema} /> },
              {
                label: 'How a worker runs it',
                value: (t) => {
                  const snippet = workerSnippet(collectionId, t.name);
                  return (
                    <details class="snippet">
                      <summary>The typed client’s runWorker</summary>
                      <pre class="json" data-worker-snippet={t.name}>
                        {snippet}
                      </pre>
                      <CopyButton text={snippet} what={`the worker of ${t.name}`} />
                    </details>
                  );
                },
              },
              {
                label: 'Actions',
                value: (t) => (
                  <span class="row-actions">
                    <button type="button" onClick={() => change(t)} aria-label={`Change ${t.name}`}>
                      Change
                    </button>
                    <ConfirmDelete what={t.name} onConfirm={() => remove(t)} />
                  </span>
                ),
              },
            ]}
          />
        ) : null}
      </section>
      <Declare
        api={api}
        collectionId={collectionId}
        draft={draft}
        onDraft={setDraft}
        existing={items}
        onDeclared={() => {
          own.reload(true);
          all.reload(true);
        }}
      />
      <section aria-labelledby="service-tasks">
        <h2 id="service-tasks">The service’s tasks</h2>
        <p class="meta">Run by the service’s own workers; read-only.</p>
        <ErrorNote error={all.error} doing="list the service’s tasks" />
        {all.loading && !all.data ? <Loading what="the service’s tasks" /> : null}
        {all.data && service.length === 0 ? <Empty>The service offers no tasks of its own.</Empty> : null}
        {service.length > 0 ? (
          <DataTable<JobTask>
            caption="The service’s tasks"
            class="service-tasks"
            rows={service}
            rowKey={(t) => t.name}
            columns={[
              { label: 'Name', value: (t) => <code>{t.name}</code> },
              { label: 'Description', value: (t) => withCode(t.description) },
              { label: 'Payload template', value: (t) => <Template example={t.example} schema={t.payloadSchema} /> },
            ]}
          />
        ) : null}
      </section>
    </>
  );
}

/** The example payload, and the schema folded under it. */
function Template({ example, schema }: { example: unknown; schema: unknown }) {
  return (
    <>
      {example == null ? <span class="meta">No example.</span> : <pre class="json">{json(example)}</pre>}
      {schema == null ? (
        <p class="meta">Any object (no schema).</p>
      ) : (
        <details>
          <summary>Schema</summary>
          <pre class="json">{json(schema)}</pre>
        </details>
      )}
    </>
  );
}

/** Parses a JSON field of the form; empty is `undefined`; a refusal names the field. */
function parseField(label: string, text: string, ok: (v: unknown) => boolean, needs: string): unknown {
  if (!text.trim()) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw new Error(`${label} is not valid JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (!ok(value)) throw new Error(`${label} must be ${needs}.`);
  return value;
}
const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v);

function Declare({
  api,
  collectionId,
  draft,
  onDraft,
  existing,
  onDeclared,
}: {
  api: ServiceClient;
  collectionId: string;
  draft: Draft;
  onDraft: (d: Draft) => void;
  existing: AppTask[];
  onDeclared: () => void;
}) {
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const set = (field: keyof Draft) => (e: { currentTarget: { value: string } }) =>
    onDraft({ ...draft, [field]: e.currentTarget.value });

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(undefined);
    setDone(undefined);
    let payloadSchema: unknown;
    let example: unknown;
    try {
      payloadSchema = parseField(
        'The payload schema',
        draft.payloadSchema,
        (v) => isObject(v) || typeof v === 'boolean',
        'a JSON object (a JSON Schema) or true/false',
      );
      example = parseField('The example', draft.example, isObject, 'a JSON object (a payload)');
    } catch (err) {
      setError(err);
      return;
    }
    const replacing = existing.some((t) => t.name === draft.name);
    try {
      const t = await api.POST('/admin/collection/{collectionId}/tasks', {
        params: { path: { collectionId } },
        body: {
          name: draft.name,
          description: draft.description || undefined,
          maxAttempts: draft.maxAttempts ? Number(draft.maxAttempts) : undefined,
          leaseSeconds: draft.leaseSeconds ? Number(draft.leaseSeconds) : undefined,
          payloadSchema: payloadSchema as Record<string, unknown> | boolean | undefined,
          example: example as Record<string, unknown> | undefined,
        },
      });
      setDone(
        `Task ${t.name} is ${replacing ? 'declared again (its next enqueues are checked by it)' : 'declared'}: ${t.maxAttempts} attempts, leases of ${t.leaseSeconds} s.`,
      );
      onDraft(BLANK);
      onDeclared();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <section aria-labelledby="declare-task">
      <h2 id="declare-task">Declare a task</h2>
      <form class="grid" onSubmit={submit}>
        <label>
          Name
          <input
            name="name"
            required
            maxLength={100}
            spellcheck={false}
            placeholder="orders.ship"
            value={draft.name}
            onInput={set('name')}
          />
        </label>
        <label>
          Max attempts (empty: the service’s default)
          <input
            name="maxAttempts"
            type="number"
            min={1}
            max={25}
            value={draft.maxAttempts}
            onInput={set('maxAttempts')}
          />
        </label>
        <label>
          Lease seconds (empty: 60)
          <input
            name="leaseSeconds"
            type="number"
            min={5}
            max={3600}
            value={draft.leaseSeconds}
            onInput={set('leaseSeconds')}
          />
        </label>
        <label class="wide">
          Description
          <input name="description" maxLength={2000} value={draft.description} onInput={set('description')} />
        </label>
        <p class="meta wide">
          Letters, digits and <code>_ . : -</code>, starting with a letter; not a name of the service’s tasks. Declaring
          a name again replaces its declaration.
        </p>
        <label class="wide">
          Payload schema (JSON Schema, optional: without one any object is taken)
          <textarea
            name="payloadSchema"
            rows={6}
            spellcheck={false}
            placeholder={'{"type": "object", "required": ["orderId"], "properties": {"orderId": {"type": "string"}}}'}
            value={draft.payloadSchema}
            onInput={set('payloadSchema')}
          />
        </label>
        <label class="wide">
          Example payload (JSON, optional: the template offered when enqueuing)
          <textarea
            name="example"
            rows={3}
            spellcheck={false}
            placeholder={'{"orderId": "o-1"}'}
            value={draft.example}
            onInput={set('example')}
          />
        </label>
        <div class="actions wide">
          <button type="submit" disabled={!draft.name}>
            Declare
          </button>
          <button type="button" onClick={() => onDraft(BLANK)}>
            Clear
          </button>
        </div>
      </form>
      <ErrorNote error={error} doing="declare the task" />
      {done ? (
        <p class="notice" role="status">
          {done}
        </p>
      ) : null}
    </section>
  );
}
