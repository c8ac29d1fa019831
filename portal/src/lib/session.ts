/**
 * The portal's session (SPEC §9). A link carries a one-time token in its fragment
 * (`/portal/…#token=…`); it is removed from the address at once (history.replaceState,
 * so it never stays in history or gets copied) and exchanged for a session.
 *
 * Decision: the session is kept in sessionStorage — this tab only, gone when the tab
 * closes — so a reload in the same tab keeps working. Never localStorage (shared by every
 * tab, kept forever), never a cookie (sent by the browser on its own: CSRF).
 */
export interface Session {
  readonly session: string;
  readonly expires_at: string;
  readonly organization_id: string;
  readonly scopes: readonly string[];
}

const STORAGE_KEY = 'lending-api-portal-session';

/** Reads `token` from the fragment and removes the fragment from the address, keeping path and query. */
export function takeTokenFromLocation(): string | null {
  const hash = window.location.hash.replace(/^#/, '');
  if (!hash) return null;
  const token = new URLSearchParams(hash).get('token');
  history.replaceState(history.state, '', window.location.pathname + window.location.search);
  return token && token.length > 0 ? token : null;
}

export function storedSession(now = Date.now()): Session | null {
  try {
    const text = sessionStorage.getItem(STORAGE_KEY);
    if (!text) return null;
    const session = JSON.parse(text) as Session;
    if (typeof session.session !== 'string' || Date.parse(session.expires_at) <= now) {
      forgetSession();
      return null;
    }
    return session;
  } catch {
    return null;
  }
}

export function keepSession(session: Session): void {
  try {
    sessionStorage.setItem(STORAGE_KEY, JSON.stringify(session));
  } catch {
    // Storage refused (a private window's quota): the session lives in memory only, until a reload.
  }
}

export function forgetSession(): void {
  try {
    sessionStorage.removeItem(STORAGE_KEY);
  } catch {
    // Nothing kept.
  }
}

/** Exchanges a link's token; a refusal throws the API's problem (its detail says why: used, expired, invalid). */
export async function exchangeToken(token: string): Promise<Session> {
  const response = await fetch('/api/portal_sessions/exchange/', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ token }),
    credentials: 'omit',
  });
  const body = (await response.json().catch(() => null)) as Record<string, unknown> | null;
  if (!response.ok || !body) {
    throw new ProblemError(response.status, body ?? {}, 'This link could not be used.');
  }
  return body as unknown as Session;
}

export function hasScope(session: Session, scope: 'read' | 'write' | 'webhooks'): boolean {
  return scope === 'read' || session.scopes.includes(scope);
}

/** An API refusal: its problem+json `detail`, `code` and per-field `errors`. */
export class ProblemError extends Error {
  readonly status: number;
  readonly code: string | undefined;
  readonly errors: readonly { param: string; detail: string }[];
  readonly problem: Record<string, unknown>;

  constructor(status: number, problem: Record<string, unknown>, fallback: string) {
    super(typeof problem.detail === 'string' ? problem.detail : fallback);
    this.status = status;
    this.problem = problem;
    this.code = typeof problem.code === 'string' ? problem.code : undefined;
    this.errors = Array.isArray(problem.errors) ? (problem.errors as { param: string; detail: string }[]) : [];
  }
}
