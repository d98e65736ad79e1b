import { open, readFile, stat, unlink } from 'node:fs/promises';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { ShardKitError } from '../../errors.js';

export interface FileLockOptions {
  /** Give up with STORE_LOCKED after this long. */
  timeoutMs: number;
  /** A lock older than this is stale even if its owner looks alive (owner hung, or on another host). */
  staleMs: number;
}

interface LockOwner {
  pid: number;
  host: string;
  token: string;
  at: number;
}

const HOST = hostname();

/**
 * A cross-process mutex: a lock file created with O_EXCL holding its owner's pid, host and a
 * random token. A lock whose owner process is gone (same host) or that is older than `staleMs`
 * is broken; breaking is itself serialised by a second O_EXCL file, so two waiters that both see
 * the same stale lock cannot end up removing a fresh lock that a third process just took.
 */
export async function acquireFileLock(lockPath: string, options: FileLockOptions): Promise<() => Promise<void>> {
  const token = randomBytes(8).toString('hex');
  const deadline = Date.now() + options.timeoutMs;
  let delay = 2;
  for (;;) {
    if (await tryCreate(lockPath, token)) {
      return async () => {
        // Only remove the lock if it is still ours (it may have been broken as stale meanwhile).
        const owner = await readOwner(lockPath);
        if (owner?.token === token) await unlink(lockPath).catch(() => {});
      };
    }
    if (await isStale(lockPath, options.staleMs)) {
      await breakStaleLock(lockPath, options.staleMs);
      continue;
    }
    if (Date.now() >= deadline) {
      const owner = await readOwner(lockPath);
      throw new ShardKitError(
        'STORE_LOCKED',
        `topology store is locked by ${owner ? `pid ${owner.pid} on ${owner.host}` : 'another process'} (${lockPath}); gave up after ${options.timeoutMs} ms`,
      );
    }
    await sleep(delay + Math.random() * delay);
    delay = Math.min(delay * 2, 50);
  }
}

async function tryCreate(path: string, token: string): Promise<boolean> {
  let fh;
  try {
    fh = await open(path, 'wx', 0o644);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  }
  try {
    const owner: LockOwner = { pid: process.pid, host: HOST, token, at: Date.now() };
    await fh.writeFile(JSON.stringify(owner));
  } finally {
    await fh.close();
  }
  return true;
}

async function readOwner(path: string): Promise<LockOwner | undefined> {
  try {
    const owner = JSON.parse(await readFile(path, 'utf8')) as Partial<LockOwner>;
    if (typeof owner.pid === 'number' && typeof owner.host === 'string' && typeof owner.token === 'string') return owner as LockOwner;
  } catch {
    // Missing, or created but not written yet (its owner may have died in between): see isStale.
  }
  return undefined;
}

async function isStale(path: string, staleMs: number): Promise<boolean> {
  let mtimeMs: number;
  try {
    mtimeMs = (await stat(path)).mtimeMs;
  } catch {
    return false; // gone: the next tryCreate will tell
  }
  if (Date.now() - mtimeMs > staleMs) return true;
  const owner = await readOwner(path);
  return owner !== undefined && owner.host === HOST && !processAlive(owner.pid);
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists but belongs to someone else.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function breakStaleLock(lockPath: string, staleMs: number): Promise<void> {
  const breakPath = `${lockPath}.break`;
  const token = randomBytes(8).toString('hex');
  if (!(await tryCreate(breakPath, token))) {
    // Someone else is breaking it. If that breaker died mid-way, its file goes stale too.
    if (await isStale(breakPath, Math.min(staleMs, 2000))) await unlink(breakPath).catch(() => {});
    await sleep(2);
    return;
  }
  try {
    // Re-check under the break lock: the lock may already have been replaced by a live owner.
    if (await isStale(lockPath, staleMs)) await unlink(lockPath).catch(() => {});
  } finally {
    await unlink(breakPath).catch(() => {});
  }
}
