import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { contractCheckingEnv } from './response-contract-state.js';
import { fileURLToPath } from 'node:url';

export const BIN = fileURLToPath(new URL('../../bin/lending-api', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../..', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Starts the real `bin/lending-api` with DATABASE_URL (and any `extraEnv`) set. A command that serves
 * checks its answers against openapi.json like every app of the tests (contractCheckingEnv).
 */
export function spawnCli(args: readonly string[], databaseUrl: string, extraEnv: Record<string, string> = {}): ChildProcessWithoutNullStreams {
  const serves = args.includes('serve') || args.includes('--serve');
  return spawn(process.execPath, [BIN, ...args], {
    cwd: PROJECT_ROOT,
    env: { ...process.env, DATABASE_URL: databaseUrl, DEBUG: '', ...(serves ? contractCheckingEnv() : {}), ...extraEnv },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** Runs `bin/lending-api` to completion, feeding `input` on standard input. */
export function runCli(args: readonly string[], databaseUrl: string, input?: string, extraEnv: Record<string, string> = {}): Promise<CliResult> {
  const child = spawnCli(args, databaseUrl, extraEnv);
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.end(input ?? '');
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/** A postgres:// URL whose connections use the given schema (a test store's). */
export function postgresUrlWithSchema(url: string, schema: string, applicationName?: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('options', `-c search_path=${schema}`);
  if (applicationName) parsed.searchParams.set('application_name', applicationName);
  return parsed.toString();
}
