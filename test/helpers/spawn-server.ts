import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { contractCheckingEnv } from './response-contract-state.js';

const BIN = path.resolve(import.meta.dirname, '../../bin/lending-api');

export interface SpawnedServer {
  readonly child: ChildProcess;
  readonly url: string;
  readonly metricsUrl: string | undefined;
  stdout(): string;
  stderr(): string;
  /** Resolves with the exit code (or signal name) once the process has ended. */
  readonly exited: Promise<number | string>;
}

/** Runs `bin/lending-api serve …` as a real process and waits until it listens. */
export async function spawnServer(args: string[], env: Record<string, string>, startupMs = 120_000): Promise<SpawnedServer> {
  const child = spawn(process.execPath, [BIN, 'serve', '--port', '0', '--json', ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn', ...contractCheckingEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (err += chunk.toString()));
  const exited = new Promise<number | string>((resolve) => child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')));

  const started = await new Promise<{ url: string; metrics: string | null }>((resolve, reject) => {
    const timer = setTimeout(() => {
      // A process that never listened is no one's to stop later: end it here, or it outlives the suite.
      child.kill('SIGKILL');
      reject(new Error(`serve did not start in ${startupMs} ms:\n${out}\n${err}`));
    }, startupMs);
    const check = () => {
      const match = /\{[^{}]*"url"[^{}]*\}/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(JSON.parse(match[0]) as { url: string; metrics: string | null });
      }
    };
    child.stdout?.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited (${code}) before listening:\n${out}\n${err}`));
    });
  });
  return { child, url: started.url, metricsUrl: started.metrics ?? undefined, stdout: () => out, stderr: () => err, exited };
}
