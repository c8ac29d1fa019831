import { readFileSync } from 'node:fs';
import { Command, CommanderError } from 'commander';
import { registerDemo } from './commands/demo.js';
import { registerDistribute } from './commands/distribute.js';
import { registerDraw } from './commands/draw.js';
import { registerIdempotency } from './commands/idempotency.js';
import { registerImport } from './commands/import.js';
import { registerKey } from './commands/key.js';
import { registerMigrate } from './commands/migrate.js';
import { registerOrg } from './commands/org.js';
import { registerRepay } from './commands/repay.js';
import { registerServe } from './commands/serve.js';
import { reportError } from './output.js';

export function buildProgram(): Command {
  const program = new Command('lending-api')
    .description('Payment methods and credit limits for lenders. Reads DATABASE_URL (default pglite://./data).')
    .version(packageVersion(), '-V, --version', 'print the version')
    .showHelpAfterError()
    .exitOverride();
  registerServe(program);
  registerMigrate(program);
  registerDistribute(program);
  registerOrg(program);
  registerKey(program);
  registerImport(program);
  registerDraw(program);
  registerRepay(program);
  registerDemo(program);
  registerIdempotency(program);
  return program;
}

/** The version in package.json (two levels up from src/cli/ and from dist/cli/ alike). */
function packageVersion(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return manifest.version;
}

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    reportError(error);
    return 1;
  }
}
