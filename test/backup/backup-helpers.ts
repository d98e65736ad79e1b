/** What the backup tests share: waiting for a condition, and counting which acknowledged objects a kit can read. */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { isShardKitError } from '../../src/errors.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import { CLI } from '../cli/cli-harness.js';

/** Resolves once `check` holds (no fixed sleep: the machine may be slow); throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

/** How many of `ids` the kit reads back (NOT_FOUND counts as absent; any other error is thrown). */
export async function present(kit: ShardKit, ids: bigint[]): Promise<number> {
  let n = 0;
  for (const id of ids) {
    try {
      await kit.objects.get(id);
      n++;
    } catch (err) {
      if (!isShardKitError(err, 'NOT_FOUND')) throw err;
    }
  }
  return n;
}

/**
 * `shardkit backup archive` as its own process (what an operator's service unit runs), on a dev
 * cluster's directory or on a fleet given by `['--config', FILE]` (with `env`: its admin user).
 */
export function startArchiver(fleet: string | string[], to: string, env: Record<string, string> = {}): { child: ChildProcess; stderr: () => string; exit: Promise<number | null> } {
  const source = typeof fleet === 'string' ? ['--dir', fleet] : fleet;
  const child = spawn(process.execPath, [CLI, 'backup', 'archive', ...source, '--to', to], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  return { child, stderr: () => err, exit: new Promise((r) => child.on('exit', (c) => r(c))) };
}
