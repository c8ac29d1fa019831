import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { describe } from 'vitest';

const SEARCHED = ['/usr/bin', '/usr/local/bin', ...(process.env.PATH ?? '').split(path.delimiter).filter(Boolean)];

/** Where a Prometheus program is installed (Debian's `prometheus` package brings both), or undefined. */
export function findProgram(name: 'promtool' | 'prometheus'): string | undefined {
  return SEARCHED.map((dir) => path.join(dir, name)).find((candidate) => existsSync(candidate));
}

export const PROMTOOL = findProgram('promtool');
export const MISSING_PROMTOOL = 'promtool is not installed: install Debian\'s `prometheus` package (sudo apt-get install -y prometheus), which brings /usr/bin/promtool';

/**
 * `describe` for tests that run promtool: under CI a missing promtool fails
 * them (.ci/run installs it); elsewhere they are skipped, saying which
 * package brings it.
 */
export function describeWithPromtool(title: string, body: (promtool: string) => void): void {
  if (!PROMTOOL && !process.env.CI) {
    console.warn(`${title}: skipped: ${MISSING_PROMTOOL}`);
    describe.skip(title, () => body(''));
    return;
  }
  describe(title, () => {
    if (!PROMTOOL) throw new Error(MISSING_PROMTOOL);
    body(PROMTOOL);
  });
}

export interface ToolRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs promtool with `args` (and `input` on its stdin); resolves with its exit code and output, whatever the code. */
export function runPromtool(promtool: string, args: readonly string[], input?: string): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const child = execFile(promtool, [...args], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === 'number' ? error.code : undefined) : 0;
      if (code === undefined) reject(error instanceof Error ? error : new Error(String(error)));
      else resolve({ code, stdout, stderr });
    });
    child.stdin?.end(input ?? '');
  });
}
