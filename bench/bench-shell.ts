import { spawn } from 'node:child_process';
import { cpus } from 'node:os';

/** Runs a bash pipeline (pipefail: a failing stage fails it), its stderr shown, its stdout dropped. */
export function sh(command: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-o', 'pipefail', '-c', command], { stdio: ['ignore', 'ignore', 'inherit'] });
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${command.slice(0, 80)} exited ${code}`))));
  });
}

/**
 * `mariadb-dump ... | mariadb ...`, as a shell pipe would run it; resolves when both exit 0, with
 * the GTID position the dump wrote (`--gtid --master-data=2` writes it at its end, as a comment),
 * or undefined when it wrote none.
 */
export function dumpPipe(dumpArgs: string[], loadArgs: string[]): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const dump = spawn('mariadb-dump', dumpArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    const load = spawn('mariadb', loadArgs, { stdio: ['pipe', 'ignore', 'inherit'] });
    let tail = '';
    dump.stdout.on('data', (b: Buffer) => {
      tail = (tail + b.toString('latin1')).slice(-8192);
    });
    dump.stdout.pipe(load.stdin);
    let left = 2;
    const exited = (what: string) => (code: number | null) => {
      if (code !== 0) reject(new Error(`${what} exited ${code}`));
      else if (--left === 0) resolve(/gtid_slave_pos\s*=\s*'([^']*)'/.exec(tail)?.[1]);
    };
    dump.on('close', exited('mariadb-dump'));
    load.on('close', exited('mariadb'));
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
