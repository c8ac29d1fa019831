import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pgliteDirectoryFromTemplate } from '../helpers/pglite-template.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('../..', import.meta.url));

// `npm ci` builds dist/ (the `prepare` script); `npm test` rebuilds it when stale.
describe('the compiled build', () => {
  beforeAll(async () => {
    await run(process.execPath, ['scripts/build.mjs', '--if-stale'], { cwd: ROOT });
  }, 300_000);

  it('runs the CLI without tsx and finds every migration next to the compiled store', async () => {
    const entry = path.join(ROOT, 'dist/cli/run.js');
    const env = { ...process.env, DATABASE_URL: 'pglite://memory' };
    const migrations = (await readdir(path.join(ROOT, 'src/store/migrations'))).filter((name) => name.endsWith('.sql')).sort();
    expect(migrations.length).toBeGreaterThan(0);
    const migrated = await run(process.execPath, [entry, 'migrate'], { cwd: ROOT, env });
    expect(migrated.stdout).toBe(`applied ${migrations.map((name) => name.replace(/\.sql$/, '')).join(', ')} to pglite://memory\n`);

    // On a directory already migrated (the test template): a second in-memory store would run initdb and
    // every migration again, seconds of CPU this check does not need.
    const dir = await mkdtemp(path.join(tmpdir(), 'compiled-entry-'));
    try {
      await pgliteDirectoryFromTemplate(path.join(dir, 'data'));
      const onDirectory = { ...env, DATABASE_URL: `pglite://${path.join(dir, 'data')}` };
      const failed = await run(process.execPath, [entry, 'key', 'list', '--org', 'org_missing'], { cwd: ROOT, env: onDirectory }).catch(
        (error: { code: number; stderr: string }) => error,
      );
      expect(failed).toMatchObject({ code: 1, stderr: "lending-api: no organization 'org_missing'\n" });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 600_000);

  it("points each source map at the TypeScript file it was compiled from", async () => {
    const maps = (await readdir(path.join(ROOT, 'dist'), { recursive: true })).filter((name) => name.endsWith('.js.map'));
    expect(maps).toContain(path.join('cli', 'run.js.map'));
    for (const map of maps) {
      const { sources } = JSON.parse(await readFile(path.join(ROOT, 'dist', map), 'utf8')) as { sources: string[] };
      const resolved = sources.map((source) => path.relative(ROOT, path.resolve(ROOT, 'dist', path.dirname(map), source)));
      expect(resolved, map).toEqual([path.join('src', map.replace(/\.js\.map$/, '.ts'))]);
    }
  });
});

// A stand-in project with the real bin/lending-api and build-state check, and
// a dist/ and src/ that each print which one ran.
describe('bin/lending-api chooses between dist/ and the sources', () => {
  let project = '';
  const binOf = () => path.join(project, 'bin/lending-api');
  const ran = async () => (await run(process.execPath, [binOf(), 'anything'], { cwd: project })).stdout.trim();
  const stamp = (startedAt: number) => writeFile(path.join(project, 'dist/build.json'), JSON.stringify({ startedAt }));
  const srcFile = () => path.join(project, 'src/cli/run.ts');
  const setMtime = (file: string, ms: number) => utimes(file, ms / 1000, ms / 1000);

  beforeAll(async () => {
    // Inside the project, so tsx resolves from its node_modules.
    project = await mkdtemp(path.join(ROOT, '.build-test-'));
    await cp(path.join(ROOT, 'bin/lending-api'), binOf());
    await cp(path.join(ROOT, 'scripts/build-state.mjs'), path.join(project, 'scripts/build-state.mjs'));
    await writeFile(path.join(project, 'package.json'), '{ "type": "module" }\n');
    await mkdir(path.join(project, 'src/cli'), { recursive: true });
    await mkdir(path.join(project, 'dist/cli'), { recursive: true });
    await writeFile(srcFile(), "const from: string = 'sources';\nconsole.log(from, process.argv[2]);\n");
    await writeFile(path.join(project, 'dist/cli/run.js'), "console.log('compiled', process.argv[2]);\n");
  });
  afterAll(async () => {
    await rm(project, { recursive: true, force: true });
  });

  const past = Date.now() - 60_000;
  async function everyInputChangedAt(ms: number): Promise<void> {
    for (const file of ['package.json', 'src/cli/run.ts', 'src/cli', 'src']) await setMtime(path.join(project, file), ms);
  }

  it('runs dist/ when its build started after the last change to src/', async () => {
    await everyInputChangedAt(past);
    await stamp(past + 1000);
    expect(await ran()).toBe('compiled anything');
  });

  it('runs the sources through tsx when a source file changed after the build started', async () => {
    await everyInputChangedAt(past);
    await stamp(past + 1000);
    await setMtime(srcFile(), past + 2000);
    expect(await ran()).toBe('sources anything');
  });

  it('runs the sources when dist/ has no finished build', async () => {
    await everyInputChangedAt(past);
    await rm(path.join(project, 'dist/build.json'), { force: true });
    expect(await ran()).toBe('sources anything');
  });

  it('runs dist/ in an installed package, which has no src/', async () => {
    await rm(path.join(project, 'src'), { recursive: true, force: true });
    expect(await ran()).toBe('compiled anything');
  });
});
