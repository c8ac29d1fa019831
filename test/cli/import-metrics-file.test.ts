import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrganization } from '../../src/organizations/organizations.js';
import { runCli } from '../helpers/cli.js';
import { SAMPLE_LINES } from '../helpers/import-lines.js';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';
import { PROMTOOL, runPromtool } from '../ops/promtool.js';

const FILE_LINES = SAMPLE_LINES.map((line) => JSON.stringify(line)).join('\n') + '\n';

/** The value of the one sample of `name` with these labels (as `key="value"` text), from a text exposition. */
function sample(exposition: string, name: string, labels: string): number | undefined {
  const line = exposition.split('\n').find((candidate) => candidate.startsWith(`${name}{`) && labels.split(',').every((label) => candidate.includes(label)));
  return line === undefined ? undefined : Number(line.split(' ').at(-1));
}

describe('lending-api import --metrics-file (progress for Prometheus)', { timeout: 600_000 }, () => {
  let dir: string;
  let url: string;

  beforeAll(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'import-metrics-'));
    url = `pglite://${path.join(dir, 'db')}`;
    await writeFile(path.join(dir, 'data.jsonl'), FILE_LINES);
    await pgliteDirectoryFromTemplate(path.join(dir, 'db'), (store) => createOrganization(store, 'Acme', 'acme'));
  });

  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("leaves the finished import's lines, phase and records in the file, whole, in a format promtool accepts", async () => {
    const file = path.join(dir, 'import.prom');
    const run = await runCli(['import', '--org', 'acme', '--metrics-file', file, path.join(dir, 'data.jsonl')], url);
    expect(run.code, run.stderr).toBe(0);

    const exposition = await readFile(file, 'utf8');
    expect(sample(exposition, 'lending_api_import_lines_read', 'org="acme"')).toBe(SAMPLE_LINES.length);
    expect(sample(exposition, 'lending_api_import_input_bytes', 'org="acme"')).toBe(Buffer.byteLength(FILE_LINES));
    expect(sample(exposition, 'lending_api_import_phase', 'phase="done"')).toBe(1);
    expect(sample(exposition, 'lending_api_import_phase', 'phase="failed"')).toBe(0);
    expect(sample(exposition, 'lending_api_import_records', 'collection="payment_methods",outcome="inserted"')).toBe(1);
    expect(sample(exposition, 'lending_api_import_records', 'collection="ledger_entries",outcome="inserted"')).toBe(2);
    const started = sample(exposition, 'lending_api_import_start_time_seconds', 'org="acme"') ?? 0;
    expect(sample(exposition, 'lending_api_import_last_update_time_seconds', 'org="acme"')).toBeGreaterThanOrEqual(started);
    // Written beside the file and renamed over it: no temporary file is left behind.
    expect((await readdir(dir)).filter((name) => name.includes('.tmp'))).toEqual([]);
    if (PROMTOOL || process.env.CI) {
      const check = await runPromtool(PROMTOOL ?? 'promtool', ['check', 'metrics'], exposition);
      expect(check.stdout + check.stderr).toBe('');
      expect(check.code).toBe(0);
    }
  });

  it('says failed when nothing was imported', async () => {
    const file = path.join(dir, 'refused.prom');
    const run = await runCli(['import', '--org', 'acme', '--metrics-file', file, '-'], url, '{"object":"drawdown","limit":"cl_1","amount":"1.001"}\n');
    expect(run.code).toBe(1);
    const exposition = await readFile(file, 'utf8');
    expect(sample(exposition, 'lending_api_import_phase', 'phase="failed"')).toBe(1);
    expect(sample(exposition, 'lending_api_import_phase', 'phase="done"')).toBe(0);
    expect(exposition).not.toContain('lending_api_import_records{');
  });
});
