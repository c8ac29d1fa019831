import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { beforeAll, afterAll } from 'vitest';
import { buildApp, type AppOptions } from '../../src/app.js';
import type { Store } from '../../src/store/store.js';

/** Builds the real app on the suite's store before its tests and closes it after. */
export function useApp(store: () => Store, options: Omit<AppOptions, 'store'> = {}): () => FastifyInstance {
  let app: FastifyInstance | undefined;
  beforeAll(async () => {
    app = await buildApp({ ...options, store: store() });
  });
  afterAll(async () => {
    await app?.close();
  });
  return () => {
    if (!app) throw new Error('app not built yet');
    return app;
  };
}

export interface Page<T = Record<string, unknown>> {
  count: number;
  next: string | null;
  previous: string | null;
  items: T[];
}

export function json<T = Record<string, unknown>>(response: LightMyRequestResponse): T {
  return JSON.parse(response.body) as T;
}

/** Follows `next` links from `url` to the end and returns every page. */
export async function allPages(app: FastifyInstance, url: string, authorization: string): Promise<Page[]> {
  const pages: Page[] = [];
  let next: string | null = url;
  while (next) {
    const target: URL = new URL(next, 'http://localhost');
    const response: LightMyRequestResponse = await app.inject({ url: target.pathname + target.search, headers: { authorization } });
    if (response.statusCode !== 200) throw new Error(`${next}: ${response.statusCode} ${response.body}`);
    const page: Page = json<Page>(response);
    pages.push(page);
    next = page.next;
  }
  return pages;
}
