import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WideColumnStore, type WideColumnStoreOptions } from '../../src/widecolumn/index.js';
import { ShardKitError } from '../../src/errors.js';

export function tempDir(prefix = 'shardkit-wc-'): { dir: string; cleanup(): void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A controllable clock: tests move time explicitly, nothing depends on the wall clock. */
export class TestClock {
  constructor(public t = 1_700_000_000_000) {}
  readonly now = (): number => this.t;
  advance(ms: number): void {
    this.t += ms;
  }
}

export async function openStore(dir: string, options: WideColumnStoreOptions = {}): Promise<WideColumnStore> {
  return WideColumnStore.open(join(dir, 'widecolumn'), { shards: 64, ...options });
}

export async function errorCode(p: Promise<unknown> | (() => unknown)): Promise<string> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    if (err instanceof ShardKitError) return err.code;
    throw err;
  }
  throw new Error('expected an error');
}

/** Rows as plain data for deepEqual: values as UTF-8 text (or hex when not text). */
export function plain(columns: Array<{ column: string; cells: Array<{ timestamp: number; value: Buffer }> }>): Array<[string, Array<[number, string]>]> {
  return columns.map((c) => [c.column, c.cells.map((x) => [x.timestamp, x.value.toString('utf8')] as [number, string])]);
}

export function byteCompare(a: string, b: string): number {
  return Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'));
}

/** Peak resident memory of this process since the last resetPeakRss, in bytes (Linux /proc VmHWM). */
export function peakRss(): number {
  const m = /VmHWM:\s+(\d+) kB/.exec(readFileSync('/proc/self/status', 'utf8'));
  return Number(m![1]) * 1024;
}

/** Resets the peak to the current resident size (Linux >= 4.0: clear_refs 5). */
export function resetPeakRss(): void {
  writeFileSync('/proc/self/clear_refs', '5');
}
