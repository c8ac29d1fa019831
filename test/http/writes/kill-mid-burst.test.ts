import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/store.js';
import { postgresUrlWithSchema } from '../../helpers/cli.js';
import { creditLimit, insertCreditLimits } from '../../helpers/records.js';
import { spawnServer, type SpawnedServer } from '../../helpers/spawn-server.js';
import { openPostgresTestStore } from '../../helpers/stores.js';
import { createTenant } from '../../helpers/tenants.js';

const BURST = 240;
const KILL_AFTER = 20;

// Killing the process mid-transaction is about PostgreSQL's rollback of its sessions: PostgreSQL only.
const databaseUrl = process.env.DATABASE_URL ?? '';
describe.runIf(/^postgres(ql)?:/.test(databaseUrl))('HTTP writes when serve is SIGKILLed mid-burst (on postgres)', () => {
  let store: Store;
  const servers: SpawnedServer[] = [];
  beforeAll(async () => {
    store = await openPostgresTestStore(databaseUrl);
  });
  afterAll(async () => {
    for (const server of servers) if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    await store.close();
  });

  it('keeps every 201, leaves nothing half-written, and completes the unanswered writes exactly once on retry', async () => {
    const tenant = await createTenant(store, 'Kill', 'write');
    await insertCreditLimits(store, tenant.org.id, [creditLimit({ uid: 'cl_burst', capacity: '1000000.00' })]);
    const [{ schema } = { schema: '' }] = await store.query<{ schema: string }>('SELECT current_schema() AS schema');
    const env = { DATABASE_URL: postgresUrlWithSchema(databaseUrl, schema), RATE_LIMIT_PER_MINUTE: '0', WRITE_RATE_LIMIT_PER_MINUTE: '0', DATABASE_REQUEST_BUDGET_MS: '0' };
    const start = async () => {
      const server = await spawnServer([], env);
      servers.push(server);
      return server;
    };
    const post = (server: SpawnedServer, key: string) =>
      fetch(`${server.url}/api/limits/cl_burst/drawdowns/`, {
        method: 'POST',
        headers: { authorization: tenant.authorization, 'content-type': 'application/json', 'idempotency-key': key },
        body: JSON.stringify({ amount: '1.00' }),
      });
    const keys = Array.from({ length: BURST }, (_, i) => `burst-${i}`);

    const first = await start();
    const answered = new Map<string, { status: number; body: string }>();
    let created = 0;
    await Promise.all(
      keys.map(async (key) => {
        try {
          const response = await post(first, key);
          const body = await response.text();
          answered.set(key, { status: response.status, body });
          if (response.status === 201 && ++created === KILL_AFTER) first.child.kill('SIGKILL');
        } catch {
          // No answer: the process died with this request in flight (or before it arrived).
        }
      }),
    );
    await first.exited;
    const ok = [...answered].filter(([, answer]) => answer.status === 201);
    expect(ok.length).toBeGreaterThanOrEqual(KILL_AFTER);
    expect(answered.size, 'the kill came mid-burst: some requests were never answered').toBeLessThan(BURST);
    // A request kept waiting for a pooled connection on a busy machine gets 503, having written nothing (checked below).
    const refusedKeys = [...answered].filter(([, answer]) => answer.status !== 201);
    expect(refusedKeys.every(([, answer]) => answer.status === 503)).toBe(true);

    // Every 201 is in the ledger, and the stored answers and the entries match one for one.
    const entries = await store.query<{ id: string }>('SELECT id FROM ledger_entries WHERE org_id = $1', [tenant.org.id]);
    const entryIds = new Set(entries.map((row) => row.id));
    for (const [, answer] of ok) expect(entryIds.has((JSON.parse(answer.body) as { entry: { id: string } }).entry.id)).toBe(true);
    // An answer is stored as its text (a batch) or as the values it was rendered from (a write that ran alone).
    const stored = await store.query<{ idempotency_key: string; response_status: number | null; entry_id: string | null }>(
      `SELECT idempotency_key, response_status, coalesce(response_body::jsonb -> 'entry' ->> 'id', response_row ->> 'entry_id') AS entry_id
         FROM idempotency_keys WHERE org_id = $1`,
      [tenant.org.id],
    );
    const storedKeys = new Set(stored.map((row) => row.idempotency_key));
    for (const [key] of refusedKeys) expect(storedKeys.has(key), `${key} was answered 503 yet left a stored response`).toBe(false);
    expect(stored.every((row) => Number(row.response_status) === 201 && row.entry_id !== null)).toBe(true);
    expect(new Set(stored.map((row) => row.entry_id))).toEqual(entryIds);
    const [limit] = await store.query<{ outstanding: string }>("SELECT outstanding::text AS outstanding FROM credit_limits WHERE org_id = $1 AND uid = 'cl_burst'", [
      tenant.org.id,
    ]);
    expect(Number(limit?.outstanding)).toBe(entryIds.size);

    // Retrying every write with its key: the answered ones replay their answer, the rest complete once.
    const second = await start();
    // A request kept waiting for a pooled connection on a busy machine gets 503 (nothing written): retry it too.
    const retry = async (key: string) => {
      for (;;) {
        const response = await post(second, key);
        if (response.status !== 503) return { key, response };
        await response.text();
      }
    };
    const retried = await Promise.all(keys.map(retry));
    for (const { key, response } of retried) {
      expect(response.status, key).toBe(201);
      const body = await response.text();
      const before = answered.get(key);
      if (before?.status === 201) {
        expect(response.headers.get('idempotent-replayed')).toBe('true');
        expect(body).toBe(before.body);
      }
    }
    second.child.kill('SIGTERM');
    await second.exited;
    const [after] = await store.query<{ entries: string; outstanding: string }>(
      `SELECT (SELECT count(*) FROM ledger_entries WHERE org_id = $1)::text AS entries,
              (SELECT outstanding::text FROM credit_limits WHERE org_id = $1 AND uid = 'cl_burst') AS outstanding`,
      [tenant.org.id],
    );
    expect(after).toEqual({ entries: String(BURST), outstanding: `${BURST}.00` });
  }, 600_000);
});

