/**
 * A task picked from GET .../job-tasks and its JSON payload as typed, starting from the task's
 * example: the Jobs page's enqueue form and the Schedules page's create form share it.
 */
import { useState } from 'preact/hooks';
import type { Schemas } from '../../clients/typescript/src/index.ts';

type JobTask = Schemas['JobTask'];

/** A task's example payload as the textarea shows it. */
const template = (t: JobTask | undefined) => (t ? JSON.stringify(t.example ?? {}, null, 2) : '{}');

export function useTaskPayload(tasks: JobTask[] | undefined) {
  const [picked, setPicked] = useState('');
  const task = picked || tasks?.[0]?.name || '';
  const def = tasks?.find((t) => t.name === task);
  // The payload as typed; undefined until typed (then the picked task's example is shown).
  const [typed, setTyped] = useState<string>();
  return {
    task,
    def,
    payload: typed ?? template(def),
    /** Something was typed: "back to the example" has something to undo. */
    edited: typed !== undefined,
    /** Another task: its example replaces what was typed for the old one. */
    pick: (name: string) => {
      setPicked(name);
      setTyped(undefined);
    },
    type: (text: string) => setTyped(text),
    backToExample: () => setTyped(undefined),
  };
}

/** The payload's text as a JSON object (empty text: `{}`), or an Error that says why it is not one. */
export function payloadObject(text: string): Record<string, unknown> | Error {
  try {
    const body: unknown = text.trim() ? JSON.parse(text) : {};
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('a JSON object is needed');
    return body as Record<string, unknown>;
  } catch (err) {
    return new Error(`The payload is not a JSON object: ${err instanceof Error ? err.message : String(err)}`);
  }
}
