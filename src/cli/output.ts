import { ConfigError } from '../config.js';
import { DomainError } from '../domain/domain-error.js';
import { DirectoryLockedError } from '../store/directory-lock.js';

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
  const expected =
    error instanceof DomainError || error instanceof ConfigError || error instanceof DirectoryLockedError || isUsageError(error);
  if (expected) process.stderr.write(`lending-api: ${(error as Error).message}\n`);
  else if (error instanceof Error) process.stderr.write(`lending-api: ${error.message}\n${process.env.DEBUG ? `${error.stack}\n` : ''}`);
  else process.stderr.write(`lending-api: ${String(error)}\n`);
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
