import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';

export interface PortalLinkAnswer {
  object: string;
  url: string;
  expires_at: string;
}

export interface PortalGrantAnswer {
  object: string;
  session: string;
  expires_at: string;
  organization_id: string;
  scopes: string[];
}

/** Makes a link with `authorization` (a key's Basic header) and answers it with its token (from the fragment). */
export async function createLink(app: FastifyInstance, authorization: string): Promise<PortalLinkAnswer & { token: string }> {
  const response = await app.inject({ method: 'POST', url: '/api/portal_sessions/', headers: { authorization } });
  expect(response.statusCode, response.body).toBe(201);
  const link = response.json<PortalLinkAnswer>();
  return { ...link, token: tokenOfLink(link.url) };
}

export function tokenOfLink(url: string): string {
  const token = new URL(url).hash.replace(/^#token=/, '');
  expect(token).toMatch(/^lpt_[A-Za-z0-9_-]{43}$/);
  return token;
}

export function exchange(app: FastifyInstance, token: unknown): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: '/api/portal_sessions/exchange/',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({ token }),
  });
}

/** A link made and exchanged: the session's `Authorization` header value and the grant. */
export async function openSession(app: FastifyInstance, authorization: string): Promise<{ bearer: string; grant: PortalGrantAnswer }> {
  const { token } = await createLink(app, authorization);
  const response = await exchange(app, token);
  expect(response.statusCode, response.body).toBe(201);
  const grant = response.json<PortalGrantAnswer>();
  return { bearer: `Bearer ${grant.session}`, grant };
}
