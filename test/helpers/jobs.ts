/** Helpers for the jobs suites: polling a job until it reaches a state, small sleeps. */
import type { TestApp, TestCollection } from './app.ts';

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Polls `check` until it returns a value other than undefined, or throws after `timeoutMs`.
 * The pause grows from 10 ms to 100 ms: a short wait ends quickly, and a long one (retries
 * on their backoff, a receiver timing out) does not spend the CPU the other suites need.
 */
export async function waitFor<T>(
  check: () => Promise<T | undefined>,
  timeoutMs = 15_000,
  what = 'condition',
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 10; ; pause = Math.min(100, pause * 1.5)) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(pause);
  }
}

export async function getJob(t: TestApp, c: TestCollection, id: number) {
  const res = await t.inject({ method: 'GET', url: `/admin/collection/${c.id}/jobs/${id}`, headers: c.auth });
  if (res.statusCode !== 200) throw new Error(`get job ${id}: ${res.statusCode} ${res.body}`);
  return res.json();
}

export async function waitForStatus(t: TestApp, c: TestCollection, id: number, statuses: string[], timeoutMs = 15_000) {
  return waitFor(
    async () => {
      const job = await getJob(t, c, id);
      return statuses.includes(job.status) ? job : undefined;
    },
    timeoutMs,
    `job ${id} to be ${statuses.join('|')}`,
  );
}

export async function enqueue(t: TestApp, c: TestCollection, body: Record<string, unknown>) {
  const res = await t.inject({
    method: 'POST',
    url: `/admin/collection/${c.id}/async/jobs`,
    headers: c.auth,
    payload: body,
  });
  if (res.statusCode !== 202) throw new Error(`enqueue: ${res.statusCode} ${res.body}`);
  return res.json() as { id: number; task: string; runAt: string; key: string | null };
}
