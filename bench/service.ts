import { execFile, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { peakRssMiB, processCpuSeconds } from './process-stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const COMPILED_ENTRY = fileURLToPath(new URL('../dist/cli/run.js', import.meta.url));
const BARE_SERVER = fileURLToPath(new URL('./bare-server.ts', import.meta.url));
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
  /** CPU time (user + system) the process has used so far, in seconds. */
  cpuSeconds(): Promise<number>;
  /** The process's peak resident set size so far (VmHWM), in MiB. */
  peakRssMiB(): Promise<number>;
  stop(): Promise<void>;
}

export interface StartOptions {
  /** Write a V8 CPU profile of the process into this directory when it exits (`node --cpu-prof`). */
  readonly profileDir?: string | undefined;
}

/**
 * Starts the service as production runs it: compiled (`npm run build`, once
 * per harness run, so it is never stale), `dist/cli/run.js serve` as a child
 * process on a free port.
 */
export async function startService(env: Record<string, string>, options: StartOptions = {}): Promise<RunningService> {
  return startChild([await compiledEntry(), 'serve', '--port', '0', '--json'], env, options);
}

/**
 * Starts `bench/bare-server.ts`: a bare Fastify handler that runs the same
 * list-engine call on the same store code, for one organization, with no
 * authentication, hooks, logging or metrics — the floor the service's CPU
 * per request is compared with.
 */
export async function startBareServer(databaseUrl: string, orgId: string, poolSize: number, options: StartOptions = {}): Promise<RunningService> {
  return startChild(['--import', 'tsx', BARE_SERVER], { DATABASE_URL: databaseUrl, BARE_ORG_ID: orgId, DATABASE_POOL_SIZE: String(poolSize) }, options);
}

async function startChild(args: string[], env: Record<string, string>, options: StartOptions): Promise<RunningService> {
  const profile = options.profileDir ? ['--cpu-prof', '--cpu-prof-dir', options.profileDir] : [];
  const child = spawn(process.execPath, [...profile, ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Only the start-up line is wanted: later output (log lines) is read and dropped.
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
    child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}) before listening: ${stderr.trim()}`)));
  });
  const pid = child.pid ?? 0;
  return {
    url,
    pid,
    cpuSeconds: () => processCpuSeconds(pid),
    peakRssMiB: () => peakRssMiB(pid),
    stop: () =>
      new Promise<void>((resolve) => {
        // Exited already (a killed process has a signalCode and no exitCode).
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        child.once('exit', () => resolve());
        // SIGTERM: the service closes and exits normally, so --cpu-prof writes its profile.
        child.kill('SIGTERM');
      }),
  };
}
