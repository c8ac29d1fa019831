// Exclusive, process-lifetime lock on an embedded-store data directory.
//
// PGlite does not notice a second process opening the same directory; both
// would write and one would silently lose data. The lock is a Unix domain
// socket server: only one process can listen on a given address, and the
// kernel frees it when the process dies (even on SIGKILL), so there is no
// stale lock file to clean up and no check-then-delete race on Linux.
import { createHash } from 'node:crypto';
import { mkdir, realpath, unlink } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';

export interface DirectoryLock {
  readonly dir: string;
  release(): Promise<void>;
}

export interface LockHolder {
  pid: number;
  command: string;
  startedAt: string;
  dir: string;
}

export interface AcquireDirectoryLockOptions {
  /** How long to wait for the current holder to go away. Default 5000 ms. */
  waitMs?: number;
  /** How this process describes itself to processes that find the lock taken. */
  command?: string;
}

export class DirectoryLockedError extends Error {
  readonly holder: LockHolder | undefined;

  constructor(dir: string, holder: LockHolder | undefined) {
    const who = holder
      ? `process ${holder.pid} (${holder.command}, since ${holder.startedAt})`
      : 'another process';
    super(
      `data directory ${dir} is in use by ${who}; only one process may open an embedded store at a time — ` +
        'stop it, or use PostgreSQL (DATABASE_URL=postgres://…) for concurrent access',
    );
    this.name = 'DirectoryLockedError';
    this.holder = holder;
  }
}

const RETRY_MS = 150;
const QUERY_TIMEOUT_MS = 1000;
const MAX_COMMAND_LENGTH = 120;

export async function acquireDirectoryLock(
  dir: string,
  options: AcquireDirectoryLockOptions = {},
): Promise<DirectoryLock> {
  const waitMs = options.waitMs ?? 5000;
  await mkdir(dir, { recursive: true });
  const realDir = await realpath(dir);
  const abstract = process.platform === 'linux';
  const address = abstract
    ? '\0lending-api-lock-' + createHash('sha256').update(realDir).digest('hex').slice(0, 32)
    : path.join(realDir, '.lending-api.lock.sock');
  const line =
    JSON.stringify({
      pid: process.pid,
      command: options.command ?? defaultCommand(),
      startedAt: new Date(Date.now() - process.uptime() * 1000).toISOString(),
      dir: realDir,
    } satisfies LockHolder) + '\n';

  const deadline = Date.now() + waitMs;
  for (;;) {
    const close = await listen(address, line);
    if (close) {
      let released: Promise<void> | undefined;
      return { dir: realDir, release: () => (released ??= close()) };
    }

    const holder = await queryHolder(address);
    if (holder === 'refused' && !abstract) {
      // A socket file nobody listens on: its owner died. Small race: between
      // our connect and unlink, another process may have done the same and
      // started listening on a fresh file, which we would then delete. Both
      // would believe they hold the lock. Only on non-Linux platforms, and
      // only when two processes start right after a holder crashed.
      await unlink(address).catch(() => undefined);
      continue;
    }
    const remaining = deadline - Date.now();
    if (remaining <= 0) {
      throw new DirectoryLockedError(realDir, typeof holder === 'object' ? holder : undefined);
    }
    await sleep(Math.min(RETRY_MS, remaining));
  }
}

/** Resolves to a function that stops listening, or undefined if the address is taken. */
function listen(address: string, line: string): Promise<(() => Promise<void>) | undefined> {
  const connections = new Set<net.Socket>();
  const server = net.createServer((socket) => {
    connections.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => connections.delete(socket));
    socket.end(line);
  });
  // Held lock must not keep an otherwise finished process alive.
  server.unref();
  const close = () =>
    new Promise<void>((resolve) => {
      // Closing also removes a socket file (libuv unlinks it).
      server.close(() => resolve());
      for (const socket of connections) socket.destroy();
    });
  return new Promise((resolve, reject) => {
    server.once('error', (err: NodeJS.ErrnoException) => {
      if (err.code === 'EADDRINUSE') resolve(undefined);
      else reject(err);
    });
    server.listen(address, () => resolve(close));
  });
}

/** Asks the current holder to describe itself. */
function queryHolder(address: string): Promise<LockHolder | 'refused' | undefined> {
  return new Promise((resolve) => {
    let data = '';
    const socket = net.connect(address);
    socket.setEncoding('utf8');
    socket.setTimeout(QUERY_TIMEOUT_MS, () => socket.destroy());
    socket.on('data', (chunk: string) => (data += chunk));
    socket.on('error', (err: NodeJS.ErrnoException) => {
      resolve(err.code === 'ECONNREFUSED' ? 'refused' : undefined);
    });
    socket.on('close', () => resolve(parseHolder(data)));
  });
}

function parseHolder(data: string): LockHolder | undefined {
  try {
    const value: unknown = JSON.parse(data.split('\n')[0] ?? '');
    if (typeof value !== 'object' || value === null) return undefined;
    const v = value as Record<string, unknown>;
    if (typeof v.pid !== 'number') return undefined;
    return {
      pid: v.pid,
      command: String(v.command ?? ''),
      startedAt: String(v.startedAt ?? ''),
      dir: String(v.dir ?? ''),
    };
  } catch {
    return undefined;
  }
}

function defaultCommand(): string {
  const [script, ...args] = process.argv.slice(1);
  const command = [script ? path.basename(script) : path.basename(process.execPath), ...args].join(' ');
  return command.length > MAX_COMMAND_LENGTH ? command.slice(0, MAX_COMMAND_LENGTH - 1) + '…' : command;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
