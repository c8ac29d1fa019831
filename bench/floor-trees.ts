import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { processCpuSeconds } from './process-stats.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));

/**
 * A tree of `commit` built in the temporary directory (git archive, this
 * tree's node_modules linked, `npm run build`): the release an A/B runs
 * against. Built once; a later run reuses it.
 */
export async function builtTreeOf(commit: string, log: (line: string) => void): Promise<string> {
  const dir = path.join(tmpdir(), `lending-api-${commit}`);
  if (existsSync(path.join(dir, 'dist', 'cli', 'run.js'))) return dir;
  log(`building ${commit} in ${dir}`);
  mkdirSync(dir, { recursive: true });
  await run('sh', ['-c', `git -C "${ROOT}" archive ${commit} | tar -x -C "${dir}"`]);
  if (!existsSync(path.join(dir, 'node_modules'))) symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'));
  await run('node', ['scripts/build.mjs'], { cwd: dir, maxBuffer: 16 * 1024 * 1024 });
  return dir;
}

/**
 * Runs a TypeScript snippet in `tree` (its sources, through tsx): migrates
 * the database, creates the writes' organization and limits, and prints a
 * write key. Each tree prepares its own database with its own code.
 */
export async function prepareWrites(tree: string, databaseUrl: string): Promise<string> {
  const script = `
    import { PostgresStore } from './src/store/postgres-store.js';
    import { migrate } from './src/store/migrate.js';
    import { createApiKey } from './src/auth/api-keys.js';
    import { ensureWriteLimits, WRITES_ORG_UID } from './bench/write-scenarios.js';
    const store = new PostgresStore(process.env.DATABASE_URL, { poolSize: 2 });
    await migrate(store);
    await ensureWriteLimits(store);
    const { key } = await createApiKey(store, WRITES_ORG_UID, undefined, 'write');
    await store.close();
    process.stdout.write('KEY=' + key + '\\n');`;
  const file = path.join(tree, `.floor-prepare-${process.pid}.mts`);
  const { writeFile, rm } = await import('node:fs/promises');
  await writeFile(file, script);
  try {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', file], { cwd: tree, env: { ...process.env, DATABASE_URL: databaseUrl } });
    const key = /KEY=(\S+)/.exec(stdout)?.[1];
    if (!key) throw new Error(`preparing ${tree}: no key in ${stdout}`);
    return `Basic ${Buffer.from(`bench_writes:${key}`).toString('base64')}`;
  } finally {
    await rm(file, { force: true });
  }
}

export interface TreeService {
  readonly url: string;
  cpuSeconds(): Promise<number>;
  stop(): Promise<void>;
}

/** `dist/cli/run.js serve` of `tree` on a free port, as the other scenarios start the service. */
export async function serveTree(tree: string, env: Record<string, string>): Promise<TreeService> {
  const child = spawn(process.execPath, [path.join(tree, 'dist', 'cli', 'run.js'), 'serve', '--port', '0', '--json'], {
    cwd: tree,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    if (stderr.length < 64 * 1024) stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"url":\s*"([^"]+)"/.exec(stdout);
      if (match?.[1]) {
        child.stdout.off('data', onData);
        child.stdout.resume();
        resolve(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve in ${tree} exited (${code}): ${stderr.trim()}`)));
  });
  const pid = child.pid ?? 0;
  return {
    url,
    cpuSeconds: () => processCpuSeconds(pid),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
