/**
 * The signed-in admin: a collection id and its admin key, kept in this tab's sessionStorage
 * only (gone when the tab closes; never in localStorage, a cookie, a URL or a log), and the
 * typed client made from them.
 */
import { createClient, type ServiceClient } from '../../clients/typescript/src/index.ts';

export interface Session {
  collectionId: string;
  apiKey: string;
}

const STORAGE_KEY = 'console.session';

/**
 * Where the API is: the service writes its BASE_PATH into the page (meta `console-api-base`),
 * so the same build works under any prefix.
 */
export function apiBaseUrl(): string {
  const prefix = document.querySelector<HTMLMetaElement>('meta[name="console-api-base"]')?.content ?? '';
  return new URL(`${prefix}/`, location.origin).toString();
}

export function loadSession(): Session | undefined {
  try {
    const raw = sessionStorage.getItem(STORAGE_KEY);
    if (!raw) return undefined;
    const s = JSON.parse(raw) as Partial<Session>;
    return typeof s.collectionId === 'string' && typeof s.apiKey === 'string'
      ? { collectionId: s.collectionId, apiKey: s.apiKey }
      : undefined;
  } catch {
    return undefined;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(STORAGE_KEY, JSON.stringify(s));
}

/** Sign-out: the key is forgotten by this tab; what the console remembered for display goes too. */
export function clearSession(): void {
  sessionStorage.clear();
}

export function clientFor(s: Session): ServiceClient {
  return createClient({ baseUrl: apiBaseUrl(), apiKey: s.apiKey });
}
