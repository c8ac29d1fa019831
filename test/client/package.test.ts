import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startDemoServer, type DemoServer } from '../helpers/demo-server.js';
import { newSigningSecret, signPayload } from '../../src/webhooks/signature.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const CLIENT_PACKAGE = path.join(ROOT, 'packages/client');
const TSC = path.join(ROOT, 'node_modules/typescript/bin/tsc');

// What an integrator does: `npm pack` the client package (packages/client),
// `npm install` that tarball alone into an empty project, import
// `lending-api-client` from plain JavaScript (ESM and CommonJS) and from
// TypeScript, against a live server started from this checkout.
describe('the packed SDK, installed alone into another project', () => {
  let scratch = '';
  let consumer = '';
  let installOutput = '';
  let demo: DemoServer;

  beforeAll(async () => {
    scratch = await mkdtemp(path.join(tmpdir(), 'lending-api-consumer-'));
    // `npm pack` runs the package's `prepack`, which builds its dist/.
    const packed = await run('npm', ['pack', '--json', '--pack-destination', scratch], { cwd: CLIENT_PACKAGE, maxBuffer: 16 * 1024 * 1024 });
    const [{ filename }] = JSON.parse(packed.stdout) as [{ filename: string }];

    consumer = path.join(scratch, 'consumer');
    await mkdir(consumer);
    await writeFile(path.join(consumer, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
    // --offline: the package has no dependencies, so installing it needs nothing but the tarball.
    const installed = await run('npm', ['install', '--offline', '--no-audit', '--no-fund', path.join(scratch, filename)], {
      cwd: consumer,
      maxBuffer: 16 * 1024 * 1024,
    });
    installOutput = installed.stdout + installed.stderr;

    demo = await startDemoServer();
  }, 600_000);

  afterAll(async () => {
    demo?.stop();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  const env = () => ({ ...process.env, LENDING_API_URL: demo.url, LENDING_API_ORG: demo.org, LENDING_API_KEY: demo.key, LENDING_API_WRITE_KEY: demo.write_key });

  it('installs without a warning and brings no other package', async () => {
    expect(installOutput).not.toMatch(/warn/i);
    expect((await readdir(path.join(consumer, 'node_modules'))).filter((name) => !name.startsWith('.'))).toEqual(['lending-api-client']);
    const manifest = JSON.parse(await readFile(path.join(consumer, 'node_modules/lending-api-client/package.json'), 'utf8')) as Record<string, unknown>;
    expect(manifest).toMatchObject({ name: 'lending-api-client', version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
    expect(manifest).not.toHaveProperty('dependencies');
    expect(manifest).not.toHaveProperty('peerDependencies');
  });

  it('ships its README, compiled JavaScript and types, and the sources its maps point at; the JavaScript imports only its own files', async () => {
    const installed = path.join(consumer, 'node_modules/lending-api-client');
    expect((await readdir(installed)).sort()).toEqual(['README.md', 'dist', 'package.json', 'src']);
    for (const dir of ['dist/esm', 'dist/cjs']) {
      const files = await readdir(path.join(installed, dir));
      expect(files, dir).toEqual(expect.arrayContaining(['index.js', 'index.d.ts', 'index.js.map', 'lending-client.js', 'lending-client.d.ts']));
      for (const file of files.filter((name) => name.endsWith('.js'))) {
        const source = await readFile(path.join(installed, dir, file), 'utf8');
        const specifiers = [...source.matchAll(/(?:from\s+|require\()\s*['"]([^'"]+)['"]/g)].map((match) => match[1]);
        expect(specifiers.filter((specifier) => !specifier?.startsWith('./')), `${dir}/${file}`).toEqual([]);
      }
      // A debugger or an editor follows each map to the TypeScript it came from, inside the package.
      for (const map of files.filter((name) => name.endsWith('.map'))) {
        const { sources } = JSON.parse(await readFile(path.join(installed, dir, map), 'utf8')) as { sources: string[] };
        for (const source of sources) {
          const resolved = path.resolve(installed, dir, source);
          expect(resolved.startsWith(path.join(installed, 'src') + path.sep), `${dir}/${map} → ${source}`).toBe(true);
          await expect(readFile(resolved, 'utf8'), `${dir}/${map} → ${source}`).resolves.toBeTypeOf('string');
        }
      }
    }
  });

  it('works from plain JavaScript as an ES module', async () => {
    await writeFile(
      path.join(consumer, 'esm.mjs'),
      `import { LendingApiError, LendingClient, ResourceClient } from 'lending-api-client';
const { LENDING_API_URL: baseUrl, LENDING_API_ORG: organizationId, LENDING_API_KEY: apiKey } = process.env;
const client = new LendingClient({ baseUrl, organizationId, apiKey });
const page = await client.paymentMethods.list({ currency: 'usd' });
const uids = [];
for await (const method of client.paymentMethods.listAll({ currency: 'usd' })) uids.push(method.uid);
const limits = new ResourceClient({ baseUrl, organizationId, apiKey }, 'limits');
const limit = await limits.retrieve('cl_demo_03_usd');
const entity = await client.entities.retrieve('ent_demo_03');
const missing = await client.creditLimits.retrieve('cl_missing').catch((error) => error);
const writer = new LendingClient({ baseUrl, organizationId, apiKey: process.env.LENDING_API_WRITE_KEY });
const drawn = await writer.creditLimits.draw('cl_demo_05_usd', { amount: '10.00' }, { idempotencyKey: 'package-esm-1' });
const again = await writer.creditLimits.draw('cl_demo_05_usd', { amount: '10.00' }, { idempotencyKey: 'package-esm-1' });
const after = await client.creditLimits.retrieve('cl_demo_05_usd');
console.log(JSON.stringify({ count: page.count, walked: uids.length, unique: new Set(uids).size, balance: limit.balance, entity: entity.uid,
  missing: [missing instanceof LendingApiError, missing.code],
  drawn: [drawn.entry.kind, drawn.entry.id === again.entry.id, Math.round((drawn.limit.balance + 10) * 100) / 100 === Math.round((after.balance + 10) * 100) / 100] }));
`,
    );
    const { stdout } = await run(process.execPath, ['esm.mjs'], { cwd: consumer, env: env() });
    const result = JSON.parse(stdout) as { count: number; walked: number; unique: number };
    expect(result.count).toBeGreaterThan(10);
    expect(result).toEqual({
      count: result.count,
      walked: result.count,
      unique: result.count,
      balance: 11750.5,
      entity: 'ent_demo_03',
      missing: [true, 'not_found'],
      drawn: ['drawdown', true, true],
    });
  }, 120_000);

  it('works from CommonJS through require', async () => {
    await writeFile(
      path.join(consumer, 'cjs.cjs'),
      `const { LendingClient } = require('lending-api-client');
const { LENDING_API_URL: baseUrl, LENDING_API_ORG: organizationId, LENDING_API_KEY: apiKey } = process.env;
new LendingClient({ baseUrl, organizationId, apiKey }).creditLimits.list({ entity: 'ent_demo_03' })
  .then((page) => console.log(JSON.stringify(page.items.map((limit) => limit.uid).sort())));
new LendingClient({ baseUrl, organizationId, apiKey: process.env.LENDING_API_WRITE_KEY }).creditLimits.draw('cl_demo_06_usd', { amount: 1 })
  .then((result) => console.log(JSON.stringify(result.entry.kind)));
`,
    );
    const { stdout } = await run(process.execPath, ['cjs.cjs'], { cwd: consumer, env: env() });
    // Two calls in flight at once: their lines come in either order.
    const printed = stdout.trim().split('\n').map((line) => JSON.parse(line) as unknown);
    expect(printed.find(Array.isArray)).toContain('cl_demo_03_usd');
    expect(printed.find((value) => !Array.isArray(value))).toBe('drawdown');
  }, 120_000);

  it('verifies a webhook delivery with the shipped verifyWebhook, from ES modules and CommonJS', async () => {
    const secret = newSigningSecret();
    const body = JSON.stringify({ id: 'evt_pkg', object: 'event', type: 'loan.created' });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = { 'webhook-id': 'evt_pkg', 'webhook-timestamp': String(timestamp), 'webhook-signature': signPayload({ id: 'evt_pkg', timestamp, body }, [secret]) };
    const check = (load: string) => `${load}
const [body, headers, secret] = JSON.parse(process.env.DELIVERY);
verifyWebhook(body, headers, secret).then(async (event) => {
  const forged = await verifyWebhook(body.replace('created', 'repaid'), headers, secret).catch((error) => error.code);
  console.log(JSON.stringify([event.type, forged]));
});
`;
    await writeFile(path.join(consumer, 'verify.mjs'), check("import { verifyWebhook } from 'lending-api-client';"));
    await writeFile(path.join(consumer, 'verify.cjs'), check("const { verifyWebhook } = require('lending-api-client');"));
    for (const file of ['verify.mjs', 'verify.cjs']) {
      const { stdout } = await run(process.execPath, [file], { cwd: consumer, env: { ...env(), DELIVERY: JSON.stringify([body, headers, secret]) } });
      expect(JSON.parse(stdout), file).toEqual(['loan.created', 'no_matching_signature']);
    }
  }, 120_000);

  it('type-checks a TypeScript consumer against the shipped .d.ts files, which then runs', async () => {
    await writeFile(
      path.join(consumer, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { target: 'ES2023', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, lib: ['ES2023', 'DOM'], types: [], outDir: 'out' },
        files: ['typed.ts'],
      }),
    );
    await writeFile(
      path.join(consumer, 'typed.ts'),
      `import { LendingApiError, LendingClient, type CreditLimit, type LedgerWriteResult, type PaymentMethodListParams, type RetryEvent } from 'lending-api-client';
const retries: RetryEvent[] = [];
const client = new LendingClient({ baseUrl: ${JSON.stringify(demo.url)}, organizationId: ${JSON.stringify(demo.org)}, apiKey: ${JSON.stringify(demo.key)},
  timeoutMs: 60_000, onRetry: (event) => retries.push(event) });
const params: PaymentMethodListParams = { entity: 'ent_demo_03', order_by: '-updated_at' };
// Never called: the shipped types must refuse it (credit limits have no currency filter).
export const refused = () =>
  // @ts-expect-error currency is not a parameter of creditLimits.list
  client.creditLimits.list({ currency: 'USD' });
const limits: CreditLimit[] = [];
for await (const limit of client.creditLimits.listAll({ entity: 'ent_demo_03' }, { signal: new AbortController().signal })) limits.push(limit);
const page = await client.paymentMethods.list(params);
const error: unknown = await client.paymentMethods.retrieve('pm_missing').catch((caught: unknown) => caught);
const code = error instanceof LendingApiError ? error.code : 'not a LendingApiError';
const writer = new LendingClient({ baseUrl: ${JSON.stringify(demo.url)}, organizationId: ${JSON.stringify(demo.org)}, apiKey: ${JSON.stringify(demo.write_key)} });
// Never called: a drawdown needs an amount.
export const noAmount = () =>
  // @ts-expect-error amount is required
  writer.creditLimits.draw('cl_demo_07_usd', { reference: 'x' });
const drawn: LedgerWriteResult = await writer.creditLimits.draw('cl_demo_07_usd', { amount: '2.50', reference: 'typed' }, { idempotencyKey: 'package-ts-1', timeoutMs: 60_000 });
const refusal: unknown = await writer.creditLimits.repay('cl_demo_07_usd', { amount: '99999999.00' }).catch((caught: unknown) => caught);
console.log(JSON.stringify({ limits: limits.map((limit) => limit.uid).sort(), methods: page.items.every((method) => method.entity === 'ent_demo_03'), code, retries: retries.length,
  drawn: drawn.entry.reference, refusal: refusal instanceof LendingApiError ? refusal.code : 'not a LendingApiError' }));
`,
    );
    await run(process.execPath, [TSC, '-p', 'tsconfig.json'], { cwd: consumer }).catch((error: { stdout: string }) => {
      throw new Error(`tsc failed:\n${error.stdout}`);
    });
    const { stdout } = await run(process.execPath, ['out/typed.js'], { cwd: consumer });
    const result = JSON.parse(stdout) as { limits: string[] };
    expect(result.limits).toContain('cl_demo_03_usd');
    expect(result).toMatchObject({ methods: true, code: 'not_found', retries: 0, drawn: 'typed', refusal: 'repayment_exceeds_outstanding' });
  }, 120_000);
});
