import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { promisify } from 'node:util';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLoan, describeDecision, prepareLoan } from '../../examples/prepare-loan.js';
import { buildApp } from '../helpers/app.js';
import { setUpDemo } from '../../src/cli/commands/demo.js';
import { LendingClient } from '../../packages/client/src/index.js';
import { ApiError } from '../../src/domain/errors.js';
import { problemDocument } from '../../src/http/problem.js';
import { injectFetch } from '../helpers/inject-fetch.js';
import { creditLimit, insertCreditLimits, insertPaymentMethods, paymentMethod } from '../helpers/records.js';
import { describeEachStore } from '../helpers/stores.js';
import { createTenant } from '../helpers/tenants.js';

const run = promisify(execFile);
const PROJECT_ROOT = new URL('../..', import.meta.url).pathname;

describeEachStore('examples/prepare-loan.ts on the demo data', (store) => {
  let app: FastifyInstance;
  let demo: Awaited<ReturnType<typeof setUpDemo>>;
  let client: LendingClient;

  beforeAll(async () => {
    app = await buildApp({ store: store() });
    demo = await setUpDemo(store());
    client = new LendingClient({ baseUrl: 'http://lending.test', organizationId: demo.org, apiKey: demo.key, fetch: injectFetch(app) });
  });
  afterAll(async () => {
    await app.close();
  });

  it('is ready when the entity has a payment method and enough balance in the currency', async () => {
    const decision = await prepareLoan(client, { entity: 'ent_demo_03', currency: 'usd', amount: '5000' });
    expect(decision).toMatchObject({
      ready: true,
      paymentMethod: { entity: 'ent_demo_03', currency: 'USD' },
      creditLimit: { uid: 'cl_demo_03_usd', balance: 11750.5 },
      balanceAfter: 6750.5,
    });
    expect(describeDecision(decision)).toMatch(/^READY +ent_demo_03 can borrow 5000\.00 USD/);
  });

  it('declines an amount above the balance, naming the limit', async () => {
    const decision = await prepareLoan(client, { entity: 'ent_demo_03', currency: 'USD', amount: '11750.51' });
    expect(decision).toMatchObject({ ready: false, reason: 'insufficient_balance', creditLimit: { uid: 'cl_demo_03_usd' } });
    expect(describeDecision(decision)).toContain('cl_demo_03_usd has only 11750.50 USD available');
  });

  it('declines a currency the entity has no payment method in', async () => {
    expect(await prepareLoan(client, { entity: 'ent_demo_03', currency: 'EUR', amount: '10' })).toMatchObject({
      ready: false,
      reason: 'no_payment_method',
    });
  });

  it('declines when the entity has a payment method but no credit limit in the currency', async () => {
    const tenant = await createTenant(store());
    await insertPaymentMethods(store(), tenant.org.id, [paymentMethod({ entity: 'ent_x', currency: 'GBP', type: 'BACS' })]);
    await insertCreditLimits(store(), tenant.org.id, [creditLimit({ entity: 'ent_x', currency: 'USD' })]);
    const tenantClient = new LendingClient({ baseUrl: 'http://lending.test', organizationId: tenant.org.uid, apiKey: tenant.apiKey, fetch: injectFetch(app) });
    expect(await prepareLoan(tenantClient, { entity: 'ent_x', currency: 'GBP', amount: '10' })).toMatchObject({
      ready: false,
      reason: 'no_credit_limit',
      paymentMethod: { currency: 'GBP' },
    });
  });

  it('creates the loan once for one loan id, however often it is sent: the limit moves by its principal', async () => {
    const writer = new LendingClient({ baseUrl: 'http://lending.test', organizationId: demo.org, apiKey: demo.write_key, fetch: injectFetch(app) });
    const decision = await prepareLoan(writer, { entity: 'ent_demo_07', currency: 'USD', amount: '250.25' });
    if (!decision.ready) throw new Error(decision.message);
    const before = decision.creditLimit;
    const first = await createLoan(writer, decision, 'loan-in-process-1');
    const again = await createLoan(writer, decision, 'loan-in-process-1');
    expect(again).toEqual(first);
    expect(first.loan).toMatchObject({
      principal: 250.25,
      outstanding: 250.25,
      status: 'active',
      reference: 'loan-in-process-1',
      credit_limit: before.uid,
      payment_method: decision.paymentMethod.uid,
    });
    const after = await client.creditLimits.retrieve(before.uid);
    expect(Math.round((before.balance - after.balance) * 100)).toBe(25025);
    expect((await client.loans.list({ credit_limit: before.uid })).items.filter((loan) => loan.reference === 'loan-in-process-1')).toHaveLength(1);
  });

  it('refuses an amount that is not a positive decimal of cents', async () => {
    for (const amount of ['0', '-5', '1.234', 'lots']) {
      await expect(prepareLoan(client, { entity: 'ent_demo_03', currency: 'USD', amount }), amount).rejects.toThrow(RangeError);
    }
  });

  describe('npm run example:prepare-loan against a listening server', () => {
    let server: FastifyInstance;
    let url: string;
    beforeAll(async () => {
      server = await buildApp({ store: store() });
      url = await server.listen({ host: '127.0.0.1', port: 0 });
    });
    afterAll(async () => {
      await server.close();
    });

    const example = (args: string[], key = demo.key, baseUrl = url) =>
      run('npm', ['run', '-s', 'example:prepare-loan', '--', ...args], {
        cwd: PROJECT_ROOT,
        env: { ...process.env, LENDING_API_URL: baseUrl, LENDING_API_ORG: demo.org, LENDING_API_KEY: key },
      }).then(
        ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
        (error: { code: number; stdout: string; stderr: string }) => error,
      );

    const balanceOf = async (uid: string) => Math.round((await client.creditLimits.retrieve(uid)).balance * 100);

    it('prints READY, creates the loan and exits 0 for a loan the entity can take; run again for the same loan, it lends nothing more', async () => {
      const args = ['--entity', 'ent_demo_03', '--currency', 'USD', '--amount', '5000', '--loan', 'loan-cli-1'];
      const result = await example(args, demo.write_key);
      expect(result.code, result.stderr).toBe(0);
      expect(result.stdout).toContain('READY     ent_demo_03 can borrow 5000.00 USD');
      expect(result.stdout).toContain('credit limit cl_demo_03_usd: 11750.50 of 20000.00 USD available, 6750.50 after this loan');
      expect(result.stdout).toMatch(/LENT +ln_\S+ \(loan loan-cli-1\): cl_demo_03_usd has 6750\.50 USD left/);
      expect(await balanceOf('cl_demo_03_usd')).toBe(675050);

      const rerun = await example(args, demo.write_key);
      expect(rerun.code, rerun.stderr).toBe(0);
      const lent = result.stdout.match(/LENT +(ln_\S+)/)?.[1];
      expect(rerun.stdout).toMatch(
        new RegExp(`^ALREADY LENT ${lent} \\(loan loan-cli-1\\) of 5000\\.00 USD, created \\S+Z: nothing lent now; cl_demo_03_usd has 6750\\.50 USD left\\n$`),
      );
      expect(await balanceOf('cl_demo_03_usd')).toBe(675050);

      // The same loan id with another amount is a mistake, not a new loan.
      const changed = await example(['--entity', 'ent_demo_03', '--currency', 'USD', '--amount', '10', '--loan', 'loan-cli-1'], demo.write_key);
      expect(changed.code).toBe(1);
      expect(changed.stderr).toContain('prepare-loan: loan loan-cli-1 was created earlier for 5000.00 USD');
      expect(await balanceOf('cl_demo_03_usd')).toBe(675050);
    });

    it('says ALREADY LENT, not DECLINED, when the loan itself took the balance a rerun would need', async () => {
      const before = await balanceOf('cl_demo_08_usd');
      const amount = ((before - 100) / 100).toFixed(2);
      const args = ['--entity', 'ent_demo_08', '--currency', 'USD', '--amount', amount, '--loan', 'loan-cli-2'];
      expect((await example(args, demo.write_key)).code).toBe(0);
      expect(await balanceOf('cl_demo_08_usd')).toBe(100);

      const rerun = await example(args, demo.write_key);
      expect(rerun.code, rerun.stderr).toBe(0);
      expect(rerun.stdout).toMatch(new RegExp(`^ALREADY LENT ln_\\S+ \\(loan loan-cli-2\\) of ${amount.replace('.', '\\.')} USD`));
      expect(await balanceOf('cl_demo_08_usd')).toBe(100);
      // Another loan of the same amount is declined: the balance is spent.
      expect((await example(['--entity', 'ent_demo_08', '--currency', 'USD', '--amount', amount, '--loan', 'loan-cli-3'], demo.write_key)).code).toBe(2);
    });

    it('retries a loan whose answer was lost with the same key: one loan, the limit drawn once', async () => {
      // In front of the server: the first loan creation reaches it and is recorded, then the connection drops before the answer.
      let posts = 0;
      const lossy = createServer((request, response) => {
        let body = '';
        request.on('data', (chunk: Buffer) => (body += chunk.toString()));
        request.on('end', () => {
          const headers: Record<string, string> = {};
          for (const name of ['authorization', 'content-type', 'idempotency-key']) {
            const value = request.headers[name];
            if (typeof value === 'string') headers[name] = value;
          }
          const drop = request.method === 'POST' && ++posts === 1;
          void fetch(url + request.url, { method: request.method ?? 'GET', headers, ...(request.method === 'POST' ? { body } : {}) }).then(async (answer) => {
            const text = await answer.text();
            if (drop) {
              request.socket.destroy();
              return;
            }
            response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(text);
          });
        });
      });
      await new Promise<void>((resolve) => lossy.listen(0, '127.0.0.1', resolve));
      try {
        const before = await balanceOf('cl_demo_05_usd');
        const { port } = lossy.address() as AddressInfo;
        const result = await example(['--entity', 'ent_demo_05', '--currency', 'USD', '--amount', '1234.56', '--loan', 'loan-lossy-1'], demo.write_key, `http://127.0.0.1:${port}`);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stderr).toMatch(/^prepare-loan: no answer \(.*\); retrying in [0-9.]+ s \(attempt 2\)\n$/);
        expect(posts).toBe(2);
        expect(result.stdout).toMatch(/LENT +ln_\S+ \(loan loan-lossy-1\)/);
        expect(before - (await balanceOf('cl_demo_05_usd'))).toBe(123456);
      } finally {
        await new Promise((resolve) => lossy.close(resolve));
      }
    });

    it('prints each retry while the service is briefly unavailable, then the decision', async () => {
      // In front of the server: the first request is answered 503 with Retry-After: 1, as the service does when its database is away.
      let requests = 0;
      const flaky = createServer((request, response) => {
        requests += 1;
        if (requests === 1) {
          const problem = problemDocument(new ApiError('service_unavailable', 'the database is unreachable'), 'req-flaky-1');
          response.writeHead(503, { 'content-type': 'application/problem+json', 'retry-after': '1' }).end(JSON.stringify(problem));
          return;
        }
        void fetch(url + request.url, { headers: { authorization: request.headers.authorization ?? '' } }).then(async (answer) => {
          response.writeHead(answer.status, { 'content-type': answer.headers.get('content-type') ?? 'application/json' }).end(await answer.text());
        });
      });
      await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
      try {
        const { port } = flaky.address() as AddressInfo;
        const result = await example(['--entity', 'ent_demo_03', '--currency', 'USD', '--amount', '5000', '--check-only'], demo.key, `http://127.0.0.1:${port}`);
        expect(result.code, result.stderr).toBe(0);
        expect(result.stderr).toContain('prepare-loan: the database is unreachable (service_unavailable, HTTP 503); retrying in 1.0 s (attempt 2)\n');
        expect(result.stderr.match(/retrying/g)).toHaveLength(1);
        expect(result.stdout).toContain('READY     ent_demo_03 can borrow 5000.00 USD');
      } finally {
        await new Promise((resolve) => flaky.close(resolve));
      }
    });

    it('prints DECLINED and exits 2 for one it cannot take; exits 1 with the API error for a bad key', async () => {
      const declined = await example(['--entity', 'ent_demo_03', '--currency', 'USD', '--amount', '50000', '--json']);
      expect(declined.code).toBe(2);
      expect(JSON.parse(declined.stdout)).toMatchObject({ ready: false, reason: 'insufficient_balance' });

      const unauthorized = await example(['--entity', 'ent_demo_03', '--currency', 'USD', '--amount', '1'], 'lak_0000000000000000_wrong');
      expect(unauthorized.code).toBe(1);
      expect(unauthorized.stderr).toMatch(/prepare-loan: .*\(unauthorized, HTTP 401, request /);
    });
  });
});
