import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BIN } from '../helpers/cli.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const TRACE = fileURLToPath(new URL('./module-trace/register.mjs', import.meta.url));

/** What a command that only prints help has no use for: the server, the drivers, the definitions. */
const HEAVY_PACKAGES = ['fastify', '@fastify', 'pg', '@electric-sql/pglite', 'prom-client', 'pino', 'ioredis', '@sinclair/typebox'];
const HEAVY_MODULES = /\/dist\/(?:(?:server|app|cluster|config)\.js|(?:resources|store|listing|ledger|import|http|openapi|organizations)\/)/;

let dir = '';
let runs = 0;

/** Runs `bin/lending-api args` and returns every module it loaded, as paths under the project (node_modules/… or dist/…). */
async function modulesLoadedBy(args: string[], env: Record<string, string> = {}): Promise<string[]> {
  runs += 1;
  const trace = path.join(dir, `trace-${runs}.txt`);
  await run(process.execPath, ['--import', TRACE, BIN, ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/none', LOG_LEVEL: 'silent', MODULE_TRACE_FILE: trace, ...env },
  }).catch((error: { code?: unknown }) => {
    // A usage error or an unreachable database exits 1: what it loaded is still the question.
    if (error.code !== 1) throw error;
  });
  const urls = (await readFile(trace, 'utf8')).split('\n').filter((url) => url.startsWith('file:'));
  return urls.map((url) => `/${path.relative(ROOT, fileURLToPath(url))}`);
}

function heavyAmong(modules: string[]): string[] {
  return modules.filter((module) => HEAVY_PACKAGES.some((name) => module.startsWith(`/node_modules/${name}/`)) || HEAVY_MODULES.test(module));
}

describe('the command line loads a command’s modules only when that command runs', () => {
  beforeAll(async () => {
    // bin/lending-api runs dist/ when it is current: the start a user gets after `npm ci`.
    await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT });
    dir = await mkdtemp(path.join(tmpdir(), 'cli-module-trace-'));
  }, 300_000);
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it.each(['--help', '--version', 'help demo', 'draw --org org_demo'])(
    '`lending-api %s` loads neither the server, the database drivers nor the resource definitions',
    async (args) => {
      const loaded = await modulesLoadedBy(args.split(' '));
      expect(loaded).toContain('/dist/cli/run.js');
      expect(heavyAmong(loaded)).toEqual([]);
    },
  );

  it('`serve` loads them (so the trace above sees them when they load)', async () => {
    // Port 0 needs no check; the unreachable database then stops it right after loading the server.
    const loaded = await modulesLoadedBy(['serve', '--port', '0']);
    const packages = new Set(heavyAmong(loaded).map((module) => /^\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(module)?.[1]));
    for (const name of ['fastify', 'pg', 'prom-client', 'pino', '@sinclair/typebox']) expect(packages).toContain(name);
  });
});
