import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';

const BIN = path.resolve(import.meta.dirname, '../../bin/lending-api');

export interface DemoServer {
  readonly url: string;
  readonly org: string;
  /** The read key. */
  readonly key: string;
  readonly write_key: string;
  stop(): void;
}

/** `bin/lending-api demo --serve` on an in-memory embedded store and a free port, as the README runs it (no rate limit). */
export async function startDemoServer(): Promise<DemoServer> {
  const child: ChildProcess = spawn(process.execPath, [BIN, 'demo', '--serve', '--port', '0', '--json'], {
    env: { ...process.env, DATABASE_URL: 'pglite://memory', LOG_LEVEL: 'warn', RATE_LIMIT_PER_MINUTE: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const printed = await new Promise<Omit<DemoServer, 'stop'>>((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /\{[\s\S]*"url"[\s\S]*\}/.exec(out);
      if (match) resolve(JSON.parse(match[0]) as Omit<DemoServer, 'stop'>);
    });
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`lending-api demo --serve exited (${code}):\n${out}\n${err}`)));
  });
  return { ...printed, stop: () => child.kill('SIGTERM') };
}
