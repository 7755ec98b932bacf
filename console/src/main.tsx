/**
 * The console's entry: signed out, the sign-in form; signed in, the page the address names.
 * Pages other than sign-in are separate chunks, fetched when first opened, so the first load
 * is the sign-in form and the little it needs.
 */
import './style.css';
import { type ComponentType, render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ServiceClient } from '../../clients/typescript/src/index.ts';
import { navigate, useRoute } from './router.ts';
import { clearSession, clientFor, loadSession, type Session } from './session.ts';
import { SignIn } from './sign-in.tsx';
import { A, Empty, ErrorNote } from './ui.tsx';

export interface PageProps {
  api: ServiceClient;
  collectionId: string;
  /** The rest of the route after the page's name (`lnk_…` in `links/lnk_…`). */
  param: string;
}

type PageModule = { default: ComponentType<PageProps> };
const PAGES: Record<string, { title: string; load: () => Promise<PageModule> }> = {
  links: { title: 'Links', load: () => import('./pages/links.tsx') },
  domains: { title: 'Domains', load: () => import('./pages/domains.tsx') },
  webhooks: { title: 'Webhooks', load: () => import('./pages/webhooks.tsx') },
  jobs: { title: 'Jobs', load: () => import('./pages/jobs.tsx') },
  queues: { title: 'Queues', load: () => import('./pages/queues.tsx') },
  schedules: { title: 'Schedules', load: () => import('./pages/schedules.tsx') },
  tasks: { title: 'Tasks', load: () => import('./pages/tasks.tsx') },
  journeys: { title: 'Journeys', load: () => import('./pages/journeys.tsx') },
  cases: { title: 'Cases', load: () => import('./pages/cases.tsx') },
};

/** A page's code, fetched the first time it is opened (the browser keeps it after). */
function LazyPage({ name, ...props }: PageProps & { name: string }) {
  const [loaded, setLoaded] = useState<{ name: string; Page: ComponentType<PageProps> } | undefined>();
  const [error, setError] = useState<unknown>();
  useEffect(() => {
    let gone = false;
    setError(undefined);
    PAGES[name].load().then(
      (m) => !gone && setLoaded({ name, Page: m.default }),
      (err: unknown) => !gone && setError(err),
    );
    return () => {
      gone = true;
    };
  }, [name]);
  // A newer build replaced the files this page names (a deployment): a reload fetches the new ones.
  if (error) return <ErrorNote error={error} doing="load this page (reload the browser tab)" />;
  if (!loaded || loaded.name !== name) return <p role="status">Loading the page…</p>;
  return <loaded.Page {...props} />;
}

function App() {
  const [session, setSession] = useState<Session | undefined>(loadSession);
  const [api, setApi] = useState<ServiceClient | undefined>(() => (session ? clientFor(session) : undefined));
  const route = useRoute();

  useEffect(() => {
    const title = Object.hasOwn(PAGES, route.split('/')[0]) ? PAGES[route.split('/')[0]].title : 'Console';
    document.title = session ? `${title} · ${session.collectionId} · Console` : 'Sign in · Console';
  }, [route, session]);

  if (!session || !api) {
    return (
      <SignIn
        onSignedIn={(s, client) => {
          setSession(s);
          setApi(client);
          if (!Object.hasOwn(PAGES, route.split('/')[0])) navigate('links', true);
        }}
      />
    );
  }

  const signOut = () => {
    clearSession();
    setSession(undefined);
    setApi(undefined);
    navigate('', true);
  };
  const [name, ...rest] = route.split('/');
  const current = Object.hasOwn(PAGES, name) ? PAGES[name] : undefined;
  return (
    <>
      <header class="top">
        <span class="brand">
          Console · <strong>{session.collectionId}</strong>
        </span>
        <nav aria-label="Pages">
          {Object.entries(PAGES).map(([key, p]) => (
            <A key={key} route={key} current={key === name}>
              {p.title}
            </A>
          ))}
        </nav>
        <button type="button" class="sign-out" onClick={signOut}>
          Sign out
        </button>
      </header>
      <main>
        {current ? (
          <LazyPage name={name} api={api} collectionId={session.collectionId} param={rest.join('/')} />
        ) : (
          <Empty>
            There is no page here. Open <A route="links">Links</A>.
          </Empty>
        )}
      </main>
    </>
  );
}

const root = document.getElementById('app');
if (root) {
  root.textContent = '';
  render(<App />, root);
}
