import type { FastifyInstance } from 'fastify';
import type { FetchFunction } from '../../packages/client/src/index.js';

export interface RecordedRequest {
  readonly url: string;
  readonly headers: Record<string, string>;
}

/**
 * A `fetch` that serves requests with the in-process app (`app.inject`),
 * so the SDK is tested against the real routes with no socket. Every request
 * is recorded in `requests`.
 */
export function injectFetch(app: FastifyInstance | (() => FastifyInstance)): FetchFunction & { requests: RecordedRequest[] } {
  const requests: RecordedRequest[] = [];
  const fetch = async (input: string, init: { method: string; headers: Record<string, string>; body?: string }) => {
    requests.push({ url: input, headers: init.headers });
    const url = new URL(input);
    const target = typeof app === 'function' ? app() : app;
    const response = await target.inject({
      method: init.method as 'GET' | 'POST',
      url: url.pathname + url.search,
      headers: { ...init.headers, host: url.host },
      ...(init.body === undefined ? {} : { payload: init.body }),
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(response.headers)) {
      for (const item of Array.isArray(value) ? value : [value]) if (item !== undefined) headers.append(name, String(item));
    }
    return new Response(response.body, { status: response.statusCode, headers });
  };
  return Object.assign(fetch, { requests });
}
