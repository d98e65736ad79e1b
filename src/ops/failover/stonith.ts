import { spawn } from 'node:child_process';
import { ShardKitError } from '../../errors.js';
import type { HostAdmin } from './host-admin.js';

/**
 * How an old master that does not answer is kept from ever writing again, before its slave is
 * promoted. A master that is only frozen (SIGSTOP, a hung kernel, a partition) wakes up still
 * writable: a commit it was holding for its semi-sync slave times out and is acknowledged to a
 * client while the map already names the slave master, and that write is lost (Patroni #3194,
 * Orchestrator's "zombie master"). So, as Orchestrator's pre-failover hooks and Pacemaker's
 * STONITH do, it is shot before the promotion:
 * - on a dev cluster, the server's own process is killed (kill -9); `dev up` restarts it read-only;
 * - on a fleet, the operator's command in SHARDKIT_FENCE_COMMAND runs (a power switch, a cloud
 *   API call, an iptables rule on the host), with SHARDKIT_FENCE_HOST, _ADDRESS and _PORT set;
 *   a non-zero exit refuses the promotion, nothing changed;
 * - without either, the failover goes on and says the old master is unfenced.
 */
export async function fenceUnreachable(admin: HostAdmin, host: string, env: NodeJS.ProcessEnv = process.env): Promise<'killed' | 'command' | 'unfenced'> {
  if (admin.dev !== undefined) {
    await admin.dev.instance(host).kill();
    return 'killed';
  }
  return runFenceCommand(host, admin.address(host), env);
}

/** The fleet's part of fenceUnreachable, for any engine: SHARDKIT_FENCE_COMMAND with the host's address, if set. */
export async function runFenceCommand(host: string, a: { host: string; port: number }, env: NodeJS.ProcessEnv = process.env): Promise<'command' | 'unfenced'> {
  const command = env.SHARDKIT_FENCE_COMMAND;
  if (command === undefined || command === '') return 'unfenced';
  const code = await runHook(command, { ...env, SHARDKIT_FENCE_HOST: host, SHARDKIT_FENCE_ADDRESS: a.host, SHARDKIT_FENCE_PORT: String(a.port) });
  if (code !== 0) throw new ShardKitError('PRECONDITION_FAILED', `${host} does not answer and SHARDKIT_FENCE_COMMAND failed (${code}): not promoting its slave while the old master may still write`);
  return 'command';
}

/**
 * Runs an operator's hook command (shell) with `env`: 0, or what went wrong (exit code or signal,
 * and its last stderr line). One that runs past `timeoutMs` (SHARDKIT_HOOK_TIMEOUT_S, default 10
 * minutes) is killed with its process group and counts as failed: a hung hook must not hold a
 * supervisor's rounds, or its shutdown, for ever.
 */
export function runHook(command: string, env: NodeJS.ProcessEnv, timeoutMs = Number(env.SHARDKIT_HOOK_TIMEOUT_S ?? 600) * 1000): Promise<number | string> {
  return new Promise<number | string>((resolve) => {
    const child = spawn(command, { shell: true, stdio: ['ignore', 'ignore', 'pipe'], env, detached: true });
    const timer = setTimeout(() => {
      try {
        process.kill(-child.pid!, 'SIGKILL');
      } catch {
        child.kill('SIGKILL');
      }
      resolve(`no end within ${Math.round(timeoutMs / 1000)} s (killed)`);
    }, Number.isFinite(timeoutMs) && timeoutMs > 0 ? timeoutMs : 600_000);
    child.once('exit', () => clearTimeout(timer));
    let err = '';
    child.stderr!.on('data', (b: Buffer) => {
      err = (err + b.toString()).slice(-2000);
    });
    child.once('error', (e) => resolve(e.message));
    child.once('exit', (c, signal) => resolve(c === 0 ? 0 : `${signal ?? `exit ${c}`}${err.trim() === '' ? '' : `: ${err.trim().split('\n').at(-1)}`}`));
  });
}
