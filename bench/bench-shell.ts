import { spawn } from 'node:child_process';
import { cpus } from 'node:os';

/** Runs a bash pipeline (pipefail: a failing stage fails it), its stderr shown, its stdout dropped. */
export function sh(command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', command], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command.slice(0, 80)} exited ${code}`))));
  });
}

/** Milliseconds `fn` took. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now();
  await fn();
  return performance.now() - t0;
}

/** BENCH_BUSY=1: one `yes > /dev/null` per core beside the run (the issues' busy host), until stop(). */
export function busyHost(): { cores: number; stop(): void } {
  const procs = process.env.BENCH_BUSY === '1' ? cpus().map(() => spawn('yes', [], { stdio: 'ignore' })) : [];
  return { cores: procs.length, stop: () => { for (const p of procs) p.kill(); } };
}
