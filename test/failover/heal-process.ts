/** A `shardkit heal` child process whose JSON decision lines are collected (test/failover/heal.test.ts, test/chaos/). */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI, ROOT } from '../cli/cli-harness.js';

export interface Decision { verdict: string; master: string; command?: string; failover?: { newMaster: string; oldMasterShot?: string }; error?: string; reason?: string; receivedAt: number }

export interface HealProcess {
  child: ChildProcess;
  decisions: Decision[];
  /** Resolves once it holds the lock (act mode) and probes. */
  ready: Promise<void>;
  /** The first decision (already made or to come) matching `pred`; rejects if the process exits first. */
  next(pred: (d: Decision) => boolean): Promise<Decision>;
  /** SIGTERM, then waits for the exit. */
  stop(): Promise<void>;
  /** kill -9, then waits for the exit. */
  kill(): Promise<void>;
}

export function startHeal(args: string[]): HealProcess {
  const child = spawn(process.execPath, [CLI, 'heal', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  const decisions: Decision[] = [];
  const waiters: Array<{ pred: (d: Decision) => boolean; resolve: (d: Decision) => void }> = [];
  let stderr = '';
  let onReady!: () => void;
  const ready = new Promise<void>((r) => (onReady = r));
  child.stderr!.on('data', (b: Buffer) => {
    stderr = (stderr + b.toString()).slice(-20_000);
    if (/mode, a probe every/.test(stderr)) onReady();
  });
  createInterface({ input: child.stdout! }).on('line', (line) => {
    const d = { ...(JSON.parse(line) as Omit<Decision, 'receivedAt'>), receivedAt: Date.now() };
    decisions.push(d);
    for (const w of [...waiters]) if (w.pred(d)) {
      waiters.splice(waiters.indexOf(w), 1);
      w.resolve(d);
    }
  });
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  return {
    child,
    decisions,
    ready,
    next: (pred) => new Promise<Decision>((resolve, reject) => {
      const found = decisions.find(pred);
      if (found) return resolve(found);
      waiters.push({ pred, resolve });
      void exited.then(() => reject(new Error(`heal exited before the decision: ${stderr}`)));
    }),
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
    kill: async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}
