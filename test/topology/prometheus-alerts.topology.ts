import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../../src/store/migrate.js';
import { PostgresStore } from '../../src/store/postgres-store.js';
import { spawnServer, type SpawnedServer } from '../helpers/spawn-server.js';
import { createTempPostgres, freePort, postgresBinDir, type TempPostgres } from '../helpers/temp-postgres.js';
import { createTenant, type Tenant } from '../helpers/tenants.js';
import { findProgram } from '../ops/promtool.js';

const binDir = postgresBinDir();
const PROMETHEUS = findProgram('prometheus');
const RULES = fileURLToPath(new URL('../../ops/prometheus/lending-api.rules.yml', import.meta.url));
const ALERT = 'LendingApiDatabaseUnreachable';
/** The alert's `for:` in the shipped file, loaded as it is: the test waits it out. */
const FOR_MS = 60_000;
/** Polling limits: a busy machine is slow; these bound a hang, they are not speed targets. */
const FIRING_LIMIT_MS = 6 * 60_000;
const RESOLVED_LIMIT_MS = 4 * 60_000;

interface ActiveAlert {
  labels: Record<string, string>;
  state: 'pending' | 'firing';
  activeAt: string;
}

const MISSING_PROMETHEUS = "Prometheus is not installed: install Debian's `prometheus` package (sudo apt-get install -y prometheus), which brings /usr/bin/prometheus";
// As the Patroni file: skipped without the program, saying which package brings it, except under CI (.ci/run installs it).
if (!PROMETHEUS && !process.env.CI) console.warn(`prometheus-alerts.topology.ts: skipped: ${MISSING_PROMETHEUS}`);

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every second until it returns something other than undefined, or fails naming `what` after `limitMs`. */
async function until<T>(what: string, limitMs: number, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + limitMs;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch (error) {
      last = error;
    }
    await sleep(1000);
  }
  throw new Error(`${what}: not within ${limitMs / 1000} s${last ? ` (last error: ${String(last)})` : ''}`);
}

describe.runIf(binDir && (PROMETHEUS || process.env.CI))('the shipped alerts in a real Prometheus scraping two serve nodes', () => {
  let pg: TempPostgres;
  let tenant: Tenant;
  const servers: SpawnedServer[] = [];
  let prometheus: ChildProcess | undefined;
  let prometheusLog = '';
  let prometheusUrl = '';
  let scratch = '';

  const api = async <T>(route: string): Promise<T> => {
    const response = await fetch(`${prometheusUrl}${route}`);
    if (!response.ok) throw new Error(`${route}: ${response.status}`);
    return ((await response.json()) as { data: T }).data;
  };
  const alertsNamed = async (name: string): Promise<ActiveAlert[]> => (await api<{ alerts: ActiveAlert[] }>('/api/v1/alerts')).alerts.filter((alert) => alert.labels.alertname === name);
  const reachable = async (): Promise<number[]> =>
    (await api<{ result: { value: [number, string] }[] }>('/api/v1/query?query=lending_api_database_reachable')).result.map((sample) => Number(sample.value[1]));

  beforeAll(async () => {
    if (!PROMETHEUS) throw new Error(MISSING_PROMETHEUS);
    pg = await createTempPostgres(binDir ?? '');
    const store = new PostgresStore(pg.url, { poolSize: 2 });
    await migrate(store);
    tenant = await createTenant(store);
    await store.close();
    for (let i = 0; i < 2; i += 1) servers.push(await spawnServer([], { DATABASE_URL: pg.url, METRICS_PORT: '0', RATE_LIMIT_PER_MINUTE: '0' }));

    scratch = await mkdtemp(path.join(tmpdir(), 'lending-api-prometheus-'));
    const targets = servers.map((server) => new URL(server.metricsUrl ?? '').host);
    // Short intervals keep the test quick; the rules are the shipped file, unchanged (its `for: 1m` included).
    // A scrape timeout of several seconds: a failed scrape would mark the series stale and restart the `for:` clock.
    await writeFile(
      path.join(scratch, 'prometheus.yml'),
      [
        'global:',
        '  scrape_interval: 5s',
        '  scrape_timeout: 5s',
        '  evaluation_interval: 5s',
        'rule_files:',
        `  - ${JSON.stringify(RULES)}`,
        'scrape_configs:',
        '  - job_name: lending-api',
        '    static_configs:',
        `      - targets: ${JSON.stringify(targets)}`,
        '',
      ].join('\n'),
    );
    const port = await freePort();
    prometheusUrl = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [`--config.file=${path.join(scratch, 'prometheus.yml')}`, `--storage.tsdb.path=${path.join(scratch, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    prometheus.stdout?.on('data', (chunk: Buffer) => (prometheusLog += chunk.toString()));
    prometheus.stderr?.on('data', (chunk: Buffer) => (prometheusLog += chunk.toString()));
    await until(`Prometheus ready on ${prometheusUrl}\n${prometheusLog}`, 120_000, async () => ((await fetch(`${prometheusUrl}/-/ready`)).ok ? true : undefined));
  });

  afterAll(async () => {
    if (prometheus && prometheus.exitCode === null) {
      const exited = new Promise((resolve) => prometheus?.once('exit', resolve));
      prometheus.kill('SIGTERM');
      await exited;
    }
    for (const server of servers) {
      server.child.kill('SIGTERM');
      await server.exited;
    }
    await pg?.destroy();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('fires "database unreachable" for both nodes once its for: window has passed after the database stopped, and resolves when it is back', async () => {
    // Healthy: both nodes scraped, their database reachable, no alert.
    expect((await fetch(`${servers[0]?.url}/api/methods/`, { headers: { authorization: tenant.authorization } })).status).toBe(200);
    await until('both nodes scraped with their database reachable', 120_000, async () => {
      const values = await reachable();
      return values.length === 2 && values.every((value) => value === 1) ? true : undefined;
    });
    const rules = await api<{ groups: { rules: { name: string; duration: number }[] }[] }>('/api/v1/rules');
    const rule = rules.groups.flatMap((group) => group.rules).find((candidate) => candidate.name === ALERT);
    expect(rule?.duration).toBe(FOR_MS / 1000);
    expect(await alertsNamed(ALERT)).toEqual([]);

    await pg.stop();
    const stopped = Date.now();
    expect((await fetch(`${servers[1]?.url}/api/methods/`, { headers: { authorization: tenant.authorization } })).status).toBe(503);
    const firing = await until('the alert firing for both nodes', FIRING_LIMIT_MS, async () => {
      const alerts = (await alertsNamed(ALERT)).filter((alert) => alert.state === 'firing');
      return alerts.length === 2 ? alerts : undefined;
    });
    const firedAfterMs = Date.now() - stopped;
    expect(new Set(firing.map((alert) => alert.labels.instance))).toEqual(new Set(servers.map((server) => new URL(server.metricsUrl ?? '').host)));
    expect(firing.every((alert) => alert.labels.severity === 'page' && alert.labels.job === 'lending-api')).toBe(true);
    // Pending no sooner than the stop, firing no sooner than `for:` after it.
    for (const alert of firing) expect(Date.now() - Date.parse(alert.activeAt)).toBeGreaterThanOrEqual(FOR_MS);
    expect(firedAfterMs).toBeGreaterThanOrEqual(FOR_MS);

    await pg.start();
    const restarted = Date.now();
    await until('the alert resolved once the database is back', RESOLVED_LIMIT_MS, async () => ((await alertsNamed(ALERT)).length === 0 ? true : undefined));
    expect((await fetch(`${servers[0]?.url}/api/methods/`, { headers: { authorization: tenant.authorization } })).status).toBe(200);
    console.log(`${ALERT}: firing ${(firedAfterMs / 1000).toFixed(1)} s after pg_ctl stop (for: ${FOR_MS / 1000} s), resolved ${((Date.now() - restarted) / 1000).toFixed(1)} s after pg_ctl start`);
  });
});
