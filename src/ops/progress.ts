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
  /** Where the bar is drawn (default process.stderr; a test passes its own TTY-like stream). */
  stream?: NodeJS.WritableStream;
  /** What `done`/`total` count, after the numbers on the bar (e.g. "shards"). */
  unit?: string;
}

/** Bytes as people read them on a progress line: 512 B, 12.3 KiB, 4.0 MiB, 1.2 GiB. */
export function formatBytes(n: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  const i = n <= 0 ? 0 : Math.min(units.length - 1, Math.floor(Math.log2(n) / 10));
  return i === 0 ? `${n} B` : `${(n / 2 ** (10 * i)).toFixed(1)} ${units[i]}`;
}

/** `extra` on the bar: " | rows 1200/5000 | lag 3", in the order given; undefined values left out. */
function describe(extra: Record<string, unknown> | undefined): string {
  if (extra === undefined) return '';
  return Object.entries(extra).filter(([, v]) => v !== undefined).map(([k, v]) => ` | ${k} ${String(v)}`).join('');
}

export function createProgress(label: string, total: number, options: ProgressOptions = {}): Progress {
  const mode = options.mode ?? (process.stderr.isTTY ? 'bar' : 'json');
  if (mode === 'silent') return { update() {}, finish() {} };
  if (mode === 'bar') {
    const unit = options.unit === undefined ? '' : ` ${options.unit}`;
    const bar = new cliProgress.SingleBar(
      { format: `${label} [{bar}] {percentage}% | {value}/{total}${unit}{extra} | {duration_formatted} elapsed, eta {eta_formatted}`, stream: options.stream ?? process.stderr, hideCursor: true },
      cliProgress.Presets.shades_classic,
    );
    let shown: Record<string, unknown> | undefined;
    bar.start(total, 0, { extra: '' });
    return {
      update: (done, extra) => {
        shown = extra === undefined ? shown : { ...shown, ...extra };
        bar.update(done, { extra: describe(shown) });
      },
      finish: (extra) => {
        shown = extra === undefined ? shown : { ...shown, ...extra };
        bar.update(total, { extra: describe(shown) });
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
