import { ConfigError } from '../config.js';
import { DomainError } from '../domain/domain-error.js';
import { DirectoryLockedError } from '../store/directory-lock.js';
import { describePostgresTarget, parseDatabaseUrl } from '../store/open-store.js';
import { StoreUnavailableError } from '../store/store.js';
import { PortUnavailableError } from './port-check.js';

export interface OutputOptions {
  json?: boolean;
}

/** Prints a result: the JSON document with --json, else the human text. */
export function print(options: OutputOptions, value: unknown, human: string): void {
  if (options.json) process.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
  else process.stdout.write(`${human}\n`);
}

/** Error messages a user can act on go to stderr plainly; anything else with its stack. */
export function reportError(error: unknown): void {
  if (isReadOnlyDatabase(error)) {
    process.stderr.write(`lending-api: ${READ_ONLY_DATABASE}\n`);
    return;
  }
  if (error instanceof StoreUnavailableError) {
    process.stderr.write(`lending-api: ${unreachableMessage(error)}\n`);
    return;
  }
  const expected =
    error instanceof DomainError ||
    error instanceof ConfigError ||
    error instanceof DirectoryLockedError ||
    error instanceof PortUnavailableError ||
    isUsageError(error);
  if (expected) process.stderr.write(`lending-api: ${(error as Error).message}\n`);
  else if (error instanceof Error) process.stderr.write(`lending-api: ${error.message}\n${process.env.DEBUG ? `${error.stack}\n` : ''}`);
  else process.stderr.write(`lending-api: ${String(error)}\n`);
}

/** "the database at 127.0.0.1:5432/lending as app is unreachable (ECONNREFUSED)": where it tried and why, no password. */
function unreachableMessage(error: StoreUnavailableError): string {
  const location = parseDatabaseUrl(process.env.DATABASE_URL ?? '');
  const target = 'kind' in location && location.kind === 'postgres' ? ` at ${describePostgresTarget(location.url)}` : '';
  const cause = error.cause as { code?: unknown; message?: unknown } | undefined;
  const why = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : '';
  return `the database${target} is unreachable${why ? ` (${why})` : ''}`;
}

const READ_ONLY_DATABASE =
  "DATABASE_URL points at a read-only standby (a replica): run writes (import, draw, repay, org, key, migrate) against the primary";

/**
 * SQLSTATE 25006, read_only_sql_transaction: a write sent to a hot standby.
 * The store reports it as the database being unavailable (an HTTP write then
 * answers 503 and is retried once a primary is back), with the error as its cause.
 */
function isReadOnlyDatabase(error: unknown): boolean {
  for (let current = error; current instanceof Error; current = current.cause) {
    if ((current as { code?: unknown }).code === '25006') return true;
  }
  return false;
}

function isUsageError(error: unknown): boolean {
  return error instanceof Error && error.name === 'UsageError';
}

export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}
