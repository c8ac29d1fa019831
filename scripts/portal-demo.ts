/**
 * `lending-api demo --serve` on an in-memory store and a free port, as the portal's screenshots
 * (scripts/portal-screenshots.ts) and its bench row (bench/portal-scenario.ts) start it.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';

const BIN = path.resolve(import.meta.dirname, '../bin/lending-api');

/** What `demo --serve --json` prints: where it serves, its organization and the keys it made. */
export interface PortalDemo {
  url: string;
  org: string;
  key: string;
  write_key: string;
  webhooks_key: string;
}

export async function startPortalDemo(env: Record<string, string> = {}): Promise<{ demo: PortalDemo; stop: () => void }> {
  const child = spawn(process.execPath, [BIN, 'demo', '--serve', '--port', '0', '--json'], {
    env: { ...process.env, DATABASE_URL: 'pglite://memory', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const demo = await new Promise<PortalDemo>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /\{[\s\S]*"url"[\s\S]*\}/.exec(out);
      if (match) resolve(JSON.parse(match[0]) as PortalDemo);
    });
    child.once('exit', (code) => reject(new Error(`lending-api demo --serve exited (${code}): ${out}`)));
  });
  return { demo, stop: () => child.kill('SIGTERM') };
}
