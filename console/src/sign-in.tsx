import { useEffect, useState } from 'preact/hooks';
import type { ServiceClient } from '../../clients/typescript/src/index.ts';
import { clientFor, type Session, saveSession } from './session.ts';
import { ErrorNote } from './ui.tsx';

/**
 * Sign-in with a collection id and its admin key. The key is checked with one cheap call
 * before it is kept (sessionStorage, this tab only). The form is built by script only and
 * its submit never navigates, so the key cannot end up in an address.
 */
export function SignIn({ onSignedIn }: { onSignedIn: (s: Session, api: ServiceClient) => void }) {
  const [collectionId, setCollectionId] = useState('');
  const [apiKey, setApiKey] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();

  useEffect(() => {
    // The moment the console can be used: read by the browser test (time to interactive).
    if (performance.getEntriesByName('console-interactive').length === 0) performance.mark('console-interactive');
  }, []);

  const submit = async (e: Event) => {
    e.preventDefault();
    const session = { collectionId: collectionId.trim(), apiKey: apiKey.trim() };
    setBusy(true);
    setError(undefined);
    try {
      const api = clientFor(session);
      await api.GET('/admin/collection/{collectionId}/links', {
        params: { path: { collectionId: session.collectionId }, query: { limit: 1 } },
      });
      saveSession(session);
      onSignedIn(session, api);
    } catch (err) {
      setError(err);
      setBusy(false);
    }
  };

  return (
    <main class="sign-in">
      <h1>Console</h1>
      <p>Sign in with a collection’s admin key. It is kept in this browser tab only, until you sign out or close it.</p>
      <form method="post" onSubmit={submit} aria-describedby="sign-in-help">
        <label>
          Collection id
          <input
            name="collectionId"
            required
            maxLength={64}
            autoComplete="username"
            value={collectionId}
            onInput={(e) => setCollectionId(e.currentTarget.value)}
          />
        </label>
        <label>
          Admin key
          <input
            name="apiKey"
            type="password"
            required
            maxLength={4096}
            autoComplete="off"
            value={apiKey}
            onInput={(e) => setApiKey(e.currentTarget.value)}
          />
        </label>
        <button type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
      <p id="sign-in-help" class="meta">
        An admin key is made with <code>POST /admin/collection/&#123;id&#125;/api-keys</code> or{' '}
        <code>npm run cli -- key:create</code>.
      </p>
      <ErrorNote error={error} doing="sign in" />
    </main>
  );
}
