import { CommanderError } from 'commander';
import { buildProgram } from './program.js';

export async function main(argv: string[]): Promise<number> {
  try {
    await buildProgram().parseAsync(argv, { from: 'user' });
    return 0;
  } catch (error) {
    if (error instanceof CommanderError) return error.exitCode;
    // Loaded here, not at the top: it knows the store's errors, which `--help` need not load.
    const { reportError } = await import('./output.js');
    reportError(error);
    return 1;
  }
}
