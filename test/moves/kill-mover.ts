import { spawn } from 'node:child_process';
import { CLI, ROOT } from '../cli/cli-harness.js';

/**
 * Runs `shardkit shards move <moveArgs>` (the built binary) until it has recorded `phase`, then
 * kills it with SIGKILL: a mover dying right there, for the resume and abort tests. The binary
 * stops itself after that phase (SHARDKIT_TEST_MOVE_STOP_AFTER) and waits to be killed, so where
 * it dies does not depend on timing. `beforeKill` runs while it sits there.
 */
export async function killMoverAfter(phase: string, moveArgs: readonly string[], beforeKill?: () => Promise<void>): Promise<void> {
  const child = spawn(process.execPath, [CLI, 'shards', 'move', ...moveArgs], {
    cwd: ROOT, env: { ...process.env, SHARDKIT_TEST_MOVE_STOP_AFTER: phase }, stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    child.stderr.on('data', (b: Buffer) => {
      stderr += b.toString();
      if (stderr.includes(`stopped after ${phase}`)) resolve();
    });
    child.on('exit', (code) => reject(new Error(`the mover exited (${code}) before ${phase}: ${stderr}`)));
  });
  child.removeAllListeners('exit');
  const exited = new Promise((r) => child.on('exit', r));
  // Whatever the test needs to set up while the mover sits stopped after `phase` (it then dies anyway).
  if (beforeKill !== undefined) await beforeKill().catch((err: unknown) => { child.kill('SIGKILL'); throw err; });
  child.kill('SIGKILL');
  await exited;
}
