/**
 * A small router over the History API. Routes are paths relative to the page's `<base href>`
 * (`links`, `links/lnk_…`, `webhooks`, …), so they work under any BASE_PATH; the service
 * answers the page for every path under /console, so a reload or a shared address works.
 */
import { useEffect, useState } from 'preact/hooks';

const listeners = new Set<() => void>();

/** The route: the address's path after the console's base, without a trailing slash. */
export function currentRoute(): string {
  const base = new URL(document.baseURI).pathname;
  const path = location.pathname;
  const rest = path.startsWith(base) ? path.slice(base.length) : '';
  return decodeURIComponent(rest).replace(/\/+$/, '');
}

export function navigate(route: string, replace = false): void {
  const url = new URL(route, document.baseURI).toString();
  if (replace) history.replaceState(null, '', url);
  else history.pushState(null, '', url);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

export function useRoute(): string {
  const [route, setRoute] = useState(currentRoute);
  useEffect(() => {
    const update = () => setRoute(currentRoute());
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return route;
}

/** An address of the console (`links/lnk_1`), for an `<a href>`: resolved against the base. */
export const hrefOf = (route: string) => new URL(route, document.baseURI).pathname;

/** Follows a click on an `<a>` inside the app without reloading; other clicks (new tab) as usual. */
export function onLinkClick(e: MouseEvent, route: string): void {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  e.preventDefault();
  navigate(route);
}
