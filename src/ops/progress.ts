import cliProgress from 'cli-progress';
import { pino } from 'pino';

/** Progress of a long operation: a bar on a TTY, JSON lines (pino, on stderr) otherwise. */
export interface Progress {
  update(done: number, extra?: Record<string, unknown>): void;
  finish(extra?: Record<string, unknown>): void;
}

export interface ProgressOptions {
  /** Force a mode; default: bar when stderr is a TTY. */
  mode?: 'bar' | 'json' | 'silent';
  /** Minimum time between two JSON lines. */
  intervalMs?: number;
}

export function createProgress(label: string, total: number, options: ProgressOptions = {}): Progress {
  const mode = options.mode ?? (process.stderr.isTTY ? 'bar' : 'json');
  if (mode === 'silent') return { update() {}, finish() {} };
  if (mode === 'bar') {
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {percentage}% | {value}/{total} | {duration_formatted} elapsed, eta {eta_formatted}`, stream: process.stderr, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0);
    return {
      update: (done) => bar.update(done),
      finish: () => {
        bar.update(total);
        bar.stop();
      },
    };
  }
  // Through process.stderr (synchronous for files, pipes and TTYs on Linux, so no line is lost at
  // exit): a command run inside a test process (test/cli/cli-harness.ts) has its progress captured.
  const log = pino({ base: null }, { write: (line: string) => void process.stderr.write(line) });
  const interval = options.intervalMs ?? 1000;
  const started = Date.now();
  let last = 0;
  let lastDone = -1;
  log.info({ op: label, done: 0, total }, `${label} started`);
  return {
    update(done, extra) {
      const now = Date.now();
      if (now - last < interval || done === lastDone) return;
      last = now;
      lastDone = done;
      log.info({ op: label, done, total, elapsedMs: now - started, ...extra }, `${label} progress`);
    },
    finish(extra) {
      log.info({ op: label, done: total, total, elapsedMs: Date.now() - started, ...extra }, `${label} finished`);
    },
  };
}
