import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const RESULTS = path.join(ROOT, 'bench/results');

describe('the benchmark history: bench/results/*.json and docs/bench-trend.svg', () => {
  it('every record names its command, date, machine and figures per scenario', async () => {
    const names = (await readdir(RESULTS)).filter((name) => name.endsWith('.json'));
    expect(names.length).toBeGreaterThan(0);
    for (const name of names) {
      const record = JSON.parse(await readFile(path.join(RESULTS, name), 'utf8')) as Record<string, unknown>;
      expect(record, name).toMatchObject({ format: 1, command: expect.stringMatching(/npm run bench/), date: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) });
      expect(record.machine, name).toMatchObject({ cpus: expect.any(Number) });
      expect((record.scenarios as unknown[]).length, name).toBeGreaterThan(0);
      expect(name.startsWith((record.date as string).slice(0, 10).replace(/-/g, '')), name).toBe(true);
    }
  });

  it('the committed chart is what npm run bench:chart draws from the committed records', async () => {
    const scratch = await mkdtemp(path.join(tmpdir(), 'bench-trend-'));
    try {
      // Only the committed records: a run just made (not committed yet) does not make the chart stale.
      const { stdout } = await run('git', ['ls-files', 'bench/results/*.json'], { cwd: ROOT });
      const committed = path.join(scratch, 'results');
      await mkdir(committed);
      for (const file of stdout.split('\n').filter(Boolean)) await copyFile(path.join(ROOT, file), path.join(committed, path.basename(file)));
      const out = path.join(scratch, 'trend.svg');
      await run(process.execPath, ['--import', 'tsx', 'bench/chart.ts', '--out', out, '--results', committed], { cwd: ROOT });
      const drawn = await readFile(out, 'utf8');
      expect(drawn).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
      expect(drawn, 'docs/bench-trend.svg is stale: run npm run bench:chart').toBe(await readFile(path.join(ROOT, 'docs/bench-trend.svg'), 'utf8'));
    } finally {
      await rm(scratch, { recursive: true, force: true });
    }
  });
});
