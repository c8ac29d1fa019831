import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { listApiKeys } from '../../src/auth/api-keys.js';
import { buildApp } from '../helpers/app.js';
import { setUpDemo } from '../../src/cli/commands/demo.js';
import { describeEachStore } from '../helpers/stores.js';

describeEachStore('demo: each run revokes the keys earlier runs printed', (store) => {
  let app: FastifyInstance;
  const status = async (org: string, key: string) =>
    (await app.inject({ method: 'GET', url: '/api/methods/', headers: { authorization: `Basic ${Buffer.from(`${org}:${key}`).toString('base64')}` } }))
      .statusCode;

  beforeAll(async () => {
    app = await buildApp({ store: store() });
  });
  afterAll(async () => {
    await app.close();
  });

  it('leaves only the last run’s read, write and webhooks keys working, and says which it revoked', async () => {
    const first = await setUpDemo(store());
    expect(await status(first.org, first.key)).toBe(200);
    const second = await setUpDemo(store());
    const third = await setUpDemo(store());

    // One run's keys share their creation time: which comes first is not promised.
    expect([...second.revoked_key_ids].sort()).toEqual([first.key_id, first.write_key_id, first.webhooks_key_id].sort());
    expect([...third.revoked_key_ids].sort()).toEqual([second.key_id, second.write_key_id, second.webhooks_key_id].sort());
    const keys = await listApiKeys(store(), third.org);
    expect(keys.filter((key) => key.status === 'active').map((key) => key.id).sort()).toEqual([third.key_id, third.write_key_id, third.webhooks_key_id].sort());
    expect(await status(first.org, first.key)).toBe(401);
    expect(await status(second.org, second.write_key)).toBe(401);
    expect(await status(third.org, third.key)).toBe(200);
  });
});
