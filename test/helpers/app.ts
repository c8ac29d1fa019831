import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { beforeAll, afterAll } from 'vitest';
import { buildApp as buildNodeApp, type AppOptions } from '../../src/app.js';
import type { LedgerWriter } from '../../src/ledger/ledger-writer.js';
import { nodeLedger } from '../../src/node-ledger.js';
import { DEFAULT_DATABASE_SHARE, FairShare, type FairShareOptions } from '../../src/store/fair-share.js';
import type { Store } from '../../src/store/store.js';
import { TEST_LEDGER_SETTINGS } from './ledger.js';

/** A test's app: AppOptions, with the node's ledger built as serve builds it unless the test hands one in. */
export interface TestAppOptions extends Omit<AppOptions, 'ledger'> {
  ledger?: LedgerWriter;
  /** Without `ledger`: how long a write's stored response is replayed for its Idempotency-Key (default 24). */
  idempotencyKeyTtlHours?: number;
  /** Without `ledger`: the write queue's bounds (WRITE_QUEUE_WAIT_MS, WRITE_CONCURRENCY); the config's defaults when absent. */
  writeQueue?: { maxWaitMs?: number; concurrency?: number };
}

/**
 * Builds the real app as `serve` does (server.ts): the node's FairShare, and
 * its one ledger built by nodeLedger on that share (the databaseRequestBudgetMs
 * of the app is its transaction budget, none when absent), one per app as one
 * per process. A test that hands in `ledger` gets that one.
 */
export async function buildApp(options: TestAppOptions): Promise<FastifyInstance> {
  const { idempotencyKeyTtlHours, writeQueue, ...appOptions } = options;
  const shareOptions: FairShareOptions = options.databaseShare ?? DEFAULT_DATABASE_SHARE;
  const share = options.share ?? new FairShare(shareOptions);
  const ledger =
    options.ledger ??
    nodeLedger(
      options.store,
      {
        idempotencyKeyTtlHours: idempotencyKeyTtlHours ?? TEST_LEDGER_SETTINGS.idempotencyKeyTtlHours,
        databaseRequestBudgetMs: options.databaseRequestBudgetMs ?? 0,
        writeQueueWaitMs: writeQueue?.maxWaitMs ?? TEST_LEDGER_SETTINGS.writeQueueWaitMs,
        writeConcurrency: writeQueue?.concurrency ?? TEST_LEDGER_SETTINGS.writeConcurrency,
        databasePoolSize: shareOptions.slots,
      },
      { share },
    );
  return buildNodeApp({ ...appOptions, share, ledger });
}

/** Builds the real app on the suite's store before its tests and closes it after. */
export function useApp(store: () => Store, options: Omit<TestAppOptions, 'store'> = {}): () => FastifyInstance {
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
