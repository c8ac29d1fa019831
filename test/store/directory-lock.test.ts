import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { acquireDirectoryLock, DirectoryLockedError } from '../../src/store/directory-lock.js';

const projectRoot = fileURLToPath(new URL('../..', import.meta.url));
const fixture = fileURLToPath(new URL('./fixtures/hold-lock.ts', import.meta.url));

const children: ChildProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill('SIGKILL');
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'directory-lock-'));
  dirs.push(dir);
  return dir;
}

/** Starts a child process holding the lock on dir; resolves once it has it. */
function holdLock(dir: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, dir], {
    cwd: projectRoot,
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      if (out.includes('locked\n')) resolve(child);
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (err += chunk));
    child.on('exit', (code, signal) => reject(new Error(`fixture exited (${code ?? signal}): ${err}`)));
  });
}

function killed(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });
}

describe('acquireDirectoryLock', () => {
  it('fails after waitMs while another process holds the lock, naming the holder', async () => {
    const dir = await tempDir();
    const child = await holdLock(dir);

    const error = await acquireDirectoryLock(dir, { waitMs: 300 }).catch((e: unknown) => e);

    expect(error).toBeInstanceOf(DirectoryLockedError);
    const locked = error as DirectoryLockedError;
    expect(locked.holder?.pid).toBe(child.pid);
    expect(locked.holder?.command).toBe('hold-lock fixture');
    expect(locked.message).toContain(`in use by process ${child.pid} (hold-lock fixture, since `);
    expect(locked.message).toContain('DATABASE_URL');
  });

  it('is free again once the holder is killed with SIGKILL', async () => {
    const dir = await tempDir();
    const child = await holdLock(dir);
    child.kill('SIGKILL');
    await killed(child);

    const lock = await acquireDirectoryLock(dir, { waitMs: 300 });
    await lock.release();
  });

  it('waits for the holder to go away', async () => {
    const dir = await tempDir();
    const child = await holdLock(dir);
    const events: string[] = [];
    setTimeout(() => {
      events.push('killed');
      child.kill('SIGKILL');
    }, 300);

    const lock = await acquireDirectoryLock(dir, { waitMs: 5000 });
    events.push('acquired');
    await lock.release();

    expect(events).toEqual(['killed', 'acquired']);
  });

  it('lets the next acquirer in after release()', async () => {
    const dir = await tempDir();
    const first = await acquireDirectoryLock(dir, { waitMs: 0 });
    await first.release();
    await first.release(); // idempotent

    const second = await acquireDirectoryLock(dir, { waitMs: 0 });
    await second.release();
  });

  it('lets a waiting process in when the holder releases', async () => {
    const dir = await tempDir();
    const child = await holdLock(dir);
    child.stdin!.end(); // the fixture releases and exits when stdin closes
    const lock = await acquireDirectoryLock(dir, { waitMs: 5000 });
    await lock.release();
  });

  it('also refuses a second acquire in the same process', async () => {
    const dir = await tempDir();
    const lock = await acquireDirectoryLock(dir);
    try {
      const error = await acquireDirectoryLock(dir, { waitMs: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(DirectoryLockedError);
      expect((error as DirectoryLockedError).holder?.pid).toBe(process.pid);
    } finally {
      await lock.release();
    }
  });

  it('creates the directory and locks it by real path', async () => {
    const dir = path.join(await tempDir(), 'nested', 'data');
    const lock = await acquireDirectoryLock(dir);
    try {
      const error = await acquireDirectoryLock(path.join(dir, '..', 'data'), { waitMs: 0 }).catch(
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(DirectoryLockedError);
      expect((error as DirectoryLockedError).message).toContain(lock.dir);
    } finally {
      await lock.release();
    }
  });
});
