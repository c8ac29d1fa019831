import { useEffect, useState } from 'preact/hooks';

/** The portal lives under /portal/; its routes are paths below it, its state the query (shareable, back button works). */
export const BASE = '/portal/';

export interface Location {
  /** The path below /portal/ without slashes at the ends: '' (the limits), 'limits/cl_1', 'webhooks', … */
  route: string;
  query: URLSearchParams;
  search: string;
}

function read(): Location {
  const path = window.location.pathname.startsWith(BASE) ? window.location.pathname.slice(BASE.length) : '';
  const route = decodeURIComponent(path).replace(/^\/+|\/+$/g, '');
  return { route, query: new URLSearchParams(window.location.search), search: window.location.search };
}

const listeners = new Set<() => void>();
window.addEventListener('popstate', () => listeners.forEach((listener) => listener()));

/** Goes to a portal address (a path below /portal/, with its query), adding a history entry. */
export function navigate(href: string, replace = false): void {
  const target = new URL(href, window.location.origin);
  if (target.pathname + target.search === window.location.pathname + window.location.search) return;
  if (replace) history.replaceState(null, '', target.pathname + target.search);
  else history.pushState(null, '', target.pathname + target.search);
  listeners.forEach((listener) => listener());
  window.scrollTo(0, 0);
}

export function useLocation(): Location {
  const [location, setLocation] = useState(read);
  useEffect(() => {
    const update = () => setLocation(read());
    listeners.add(update);
    return () => void listeners.delete(update);
  }, []);
  return location;
}

/** A portal href: a route and a query (empty values left out). */
export function href(route: string, query: Record<string, string | undefined> | URLSearchParams = {}): string {
  const params = query instanceof URLSearchParams ? new URLSearchParams(query) : new URLSearchParams();
  if (!(query instanceof URLSearchParams)) for (const [name, value] of Object.entries(query)) if (value) params.set(name, value);
  const path = route ? `${BASE}${route.split('/').map(encodeURIComponent).join('/')}/` : BASE;
  const search = params.toString();
  return search ? `${path}?${search}` : path;
}

/** Follows a same-origin link without reloading; leaves modified clicks (new tab, …) to the browser. */
export function onLinkClick(event: MouseEvent): void {
  if (event.defaultPrevented || event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
  const anchor = (event.target as Element | null)?.closest('a');
  if (!anchor || anchor.target || anchor.hasAttribute('download')) return;
  const url = new URL(anchor.href, window.location.origin);
  if (url.origin !== window.location.origin || !url.pathname.startsWith(BASE)) return;
  event.preventDefault();
  navigate(url.pathname + url.search);
}
