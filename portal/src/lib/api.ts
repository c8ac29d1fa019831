import { ProblemError, type Session } from './session';

/** The page envelope every list answers (SPEC §2). */
export interface Page<T> {
  count: number;
  next: string | null;
  previous: string | null;
  items: T[];
}

type Listener = () => void;
let current: Session | null = null;
const expiredListeners = new Set<Listener>();

export function setApiSession(session: Session | null): void {
  current = session;
}

/** Called when the API answers 401: the session expired or its key was revoked. */
export function onSessionRefused(listener: Listener): () => void {
  expiredListeners.add(listener);
  return () => expiredListeners.delete(listener);
}

export function authorization(): Record<string, string> {
  return current ? { Authorization: `Bearer ${current.session}` } : {};
}

export interface RequestOptions {
  method?: 'GET' | 'POST' | 'DELETE';
  body?: unknown;
  idempotencyKey?: string;
  signal?: AbortSignal;
}

/** Calls the JSON API with the session as a bearer credential; a non-2xx answer throws its problem. */
export async function api<T>(path: string, options: RequestOptions = {}): Promise<T> {
  const headers: Record<string, string> = { Accept: 'application/json', ...authorization() };
  if (options.body !== undefined) headers['Content-Type'] = 'application/json';
  if (options.idempotencyKey) headers['Idempotency-Key'] = options.idempotencyKey;
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? 'GET',
      headers,
      body: options.body === undefined ? null : JSON.stringify(options.body),
      credentials: 'omit',
      signal: options.signal ?? null,
    });
  } catch (error) {
    if (error instanceof DOMException && error.name === 'AbortError') throw error;
    throw new ProblemError(0, {}, 'The service could not be reached. Check your connection and try again.');
  }
  if (response.status === 204) return undefined as T;
  const body = (await response.json().catch(() => null)) as unknown;
  if (!response.ok) {
    if (response.status === 401) for (const listener of expiredListeners) listener();
    throw new ProblemError(response.status, (body as Record<string, unknown>) ?? {}, `The service answered ${response.status}.`);
  }
  return body as T;
}

/** A list path with its query; empty values are left out (the API refuses an empty value). */
export function withQuery(path: string, query: Record<string, string | undefined>): string {
  const params = new URLSearchParams();
  for (const [name, value] of Object.entries(query)) if (value !== undefined && value !== '') params.set(name, value);
  const text = params.toString();
  return text ? `${path}?${text}` : path;
}

/** Walks a list's pages, at most `maxPages` of them (each is a request against the session's rate budget). */
export async function firstPages<T>(path: string, maxPages: number, signal?: AbortSignal): Promise<{ items: T[]; count: number }> {
  const items: T[] = [];
  let next: string | null = path;
  let count = 0;
  for (let page = 0; next && page < maxPages; page += 1) {
    const url: URL = new URL(next, window.location.origin);
    const answer: Page<T> = await api<Page<T>>(url.pathname + url.search, signal ? { signal } : {});
    items.push(...answer.items);
    count = answer.count;
    next = answer.next;
  }
  return { items, count };
}
