import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { seedOfCurrentTest } from './helpers/fast-check-seed.js';

const ROOT = join(import.meta.dirname, '..');
const SEED_SETUP = 'test/helpers/fast-check-seed.ts';
const FIXTURE_CONFIG = 'test/helpers/property-seed-fixture/vitest.config.ts';

/** Runs the fixture's failing tests in a vitest of their own; its whole output, colours off. */
async function runFixture(env: Record<string, string> = {}, ...args: string[]): Promise<string> {
  const run = promisify(execFile)(process.execPath, ['node_modules/vitest/vitest.mjs', 'run', '--root', '.', '--config', FIXTURE_CONFIG, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env, FORCE_COLOR: '0', NO_COLOR: '1', CI: '' },
    maxBuffer: 16 * 1024 * 1024,
  });
  const { stdout, stderr } = await run.catch((error: { stdout: string; stderr: string }) => error);
  return `${stdout}\n${stderr}`;
}

function filesUnder(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)));
}

/** A vitest include glob (`test/**\/*.test.ts`) as a regular expression. */
function globPattern(glob: string): RegExp {
  const pattern = glob
    .split('**/')
    .map((part) => part.replace(/[.+^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '[^/]*'))
    .join('(?:.*/)?');
  return new RegExp(`^${pattern}$`);
}

describe('fast-check seeds', () => {
  it('prints the seed of every failing test that ran a property — failing inside it, after it, or in a hook — and FC_SEED replays it', async () => {
    const output = await runFixture();
    for (const name of ['fails inside a property', 'fails after its property passed', 'ran a property that passed']) {
      expect(output, name).toMatch(new RegExp(`fast-check seed -?\\d+: replay with FC_SEED=-?\\d+ npx vitest run \\S+ -t "${name}"`));
    }
    // A property's own failure: its seed and path, in the reporter's line and in the error.
    const failed = /property failed in "fails inside a property", seed (-?\d+), path "([\d:]+)"/.exec(output);
    expect(failed, output).not.toBeNull();
    const [, seed, path] = failed!;
    expect(output).toContain(`{ seed: ${seed}, path: "${path}"`);

    const replayed = await runFixture({ FC_SEED: seed! }, '-t', 'fails inside a property');
    expect(replayed).toContain(`property failed in "fails inside a property", seed ${seed}, path "${path}"`);
  });

  it('runs the properties of every test from the seed drawn for it', () => {
    expect(fc.readConfigureGlobal()).toMatchObject({ seed: seedOfCurrentTest(), reporter: expect.any(Function) });
  });

  it('covers every property of every suite: each vitest config loads the seed setup, and no test bypasses it', async () => {
    const configs = readdirSync(ROOT).filter((file) => /^vitest(\..+)?\.config\.ts$/.test(file));
    expect(configs.length).toBeGreaterThanOrEqual(4);
    const includes: RegExp[] = [];
    for (const file of configs) {
      const config = ((await import(join(ROOT, file))) as { default: { test?: { setupFiles?: string | string[]; include?: string[] } } }).default;
      expect([config.test?.setupFiles ?? []].flat(), file).toContain(SEED_SETUP);
      includes.push(...(config.test?.include ?? []).map(globPattern));
    }
    const propertyFiles = filesUnder('test').filter(
      (file) => !file.startsWith('test/helpers/property-seed-fixture/') && readFileSync(join(ROOT, file), 'utf8').includes("from 'fast-check'"),
    );
    expect(propertyFiles.length).toBeGreaterThan(10);
    for (const file of propertyFiles) {
      const source = readFileSync(join(ROOT, file), 'utf8');
      if (file === SEED_SETUP || file === 'test/property-seeds.test.ts') continue;
      // fc.check reports to no one; a reporter or configureGlobal of its own would replace the one that prints.
      expect(source, file).not.toMatch(/fc\.check\(|configureGlobal\(|\breporter\s*:|asyncReporter\s*:/);
      if (/\.(test|topology|citus)\.ts$/.test(file)) expect(includes.some((include) => include.test(file)), `${file} is in no config`).toBe(true);
    }
  });
});
