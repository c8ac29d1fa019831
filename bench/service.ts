import { execFile, spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMPILED_ENTRY = fileURLToPath(new URL('../dist/cli/run.js', import.meta.url));
let built: Promise<unknown> | undefined;

/** Builds the service once per harness run (`npm run build`, so it is never stale); resolves to its entry. */
export async function compiledEntry(): Promise<string> {
  built ??= promisify(execFile)('npm', ['run', 'build'], { cwd: ROOT });
  await built;
  return COMPILED_ENTRY;
}

export interface RunningService {
  readonly url: string;
  readonly pid: number;
  /** The process's peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Starts the service as production runs it: compiled (`npm run build`, once
 * per harness run, so it is never stale), `dist/cli/run.js serve` as a child
 * process on a free port.
 */
export async function startService(env: Record<string, string>): Promise<RunningService> {
  const child = spawn(process.execPath, [await compiledEntry(), 'serve', '--port', '0', '--json'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const url = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
      const match = /"url":\s*"([^"]+)"/.exec(stdout);
      if (match?.[1]) resolve(match[1]);
    });
    child.once('exit', (code) => reject(new Error(`the service exited (${code}) before listening: ${stderr.trim()}`)));
  });
  const pid = child.pid ?? 0;
  return {
    url,
    pid,
    async peakRssMiB() {
      const status = await readFile(`/proc/${pid}/status`, 'utf8');
      const match = /VmHWM:\s+(\d+) kB/.exec(status);
      return match?.[1] ? Number(match[1]) / 1024 : NaN;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}
