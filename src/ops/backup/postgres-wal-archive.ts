import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DEFAULT_POSTGRES_BIN } from '../postgres/postgres-instance.js';
import { parseLsn } from '../postgres/postgres-server.js';
import { endLeftoverStreamer, recordStreamer } from './archive-streamer.js';

const bin = (name: string) => join(process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN, name);

/** initdb's default segment size, which every server shardkit makes uses. */
const SEGMENT = 16n * 1024n * 1024n;
const SEGMENT_NAME = /^([0-9A-F]{8})([0-9A-F]{8})([0-9A-F]{8})(\.partial)?$/;

export interface WalSegment {
  /** The segment's own name (without `.partial`): what recovery asks for. */
  name: string;
  path: string;
  timeline: number;
  /** The LSN the segment starts at. */
  start: bigint;
  partial: boolean;
}

/**
 * The WAL segments archived for one pair, oldest first. A segment pg_receivewal is still writing
 * is `<name>.partial`; when it was killed while a segment was open and the next run finished it,
 * both exist and the finished one wins.
 */
export function archivedSegments(dir: string): WalSegment[] {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  const byName = new Map<string, WalSegment>();
  for (const seg of names.map((n) => parseSegment(dir, n)).filter((x) => x !== undefined)) {
    const had = byName.get(seg.name);
    if (had === undefined || had.partial) byName.set(seg.name, seg);
  }
  return [...byName.values()].sort((a, b) => (a.start === b.start ? a.timeline - b.timeline : a.start < b.start ? -1 : 1));
}

/** A segment file's name read: undefined for any other file. */
function parseSegment(dir: string, file: string): WalSegment | undefined {
  const m = SEGMENT_NAME.exec(file);
  if (!m) return undefined;
  return { name: file.replace(/\.partial$/, ''), path: join(dir, file), timeline: parseInt(m[1]!, 16), start: (BigInt(`0x${m[2]}`) << 32n) | (BigInt(`0x${m[3]}`) * SEGMENT), partial: m[4] !== undefined };
}

/**
 * The segments recovery from a base backup at `lsn` can use: the one holding `lsn` and every later
 * one up to the first missing segment (the archiver was down longer than the standby kept its
 * WAL): recovery cannot replay past a gap.
 */
export function segmentsFrom(dir: string, lsn: string): WalSegment[] {
  return contiguousFrom(archivedSegments(dir), parseLsn(lsn));
}

/** `segments` (oldest first) from the one holding `at` on, stopping at the first gap. */
export function contiguousFrom(segments: WalSegment[], at: bigint): WalSegment[] {
  const out: WalSegment[] = [];
  let next: bigint | undefined;
  for (const s of segments) {
    if (s.start + SEGMENT <= at) continue;
    // Two timelines may hold the same segment (a restore or a failover switched): not a gap.
    if (next !== undefined && s.start > next) break;
    out.push(s);
    next = s.start + SEGMENT;
  }
  return out;
}

/** pg_waldump's commit lines: `desc: COMMIT 2026-11-28 13:45:01.123456 UTC`. */
const COMMIT = /desc: COMMIT (\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2}(?:\.\d+)?) UTC/g;

/** The commit times (ms) in pg_waldump's output, in WAL order. */
export function commitTimes(waldump: string): number[] {
  return [...waldump.matchAll(COMMIT)].map((m) => Date.parse(`${m[1]}T${m[2]!.slice(0, 12)}Z`));
}

/**
 * The time (ms) of the newest commit the archive of a pair holds (with `from`, a backup's
 * position: before the first gap after it), read with pg_waldump from its newest segment that has
 * one; undefined when there is none. A restore to T needs a commit at or
 * after T in the archive: PostgreSQL refuses to end a recovery before its target.
 */
export async function archivedWalUntil(dir: string, from?: string): Promise<number | undefined> {
  const scratch = mkdtempSync(join(tmpdir(), 'shardkit-waldump-'));
  try {
    // From a backup's position: only up to a gap, past which no recovery from it goes.
    for (const seg of (from === undefined ? archivedSegments(dir) : segmentsFrom(dir, from)).reverse()) {
      // pg_waldump reads a segment by its name; a .partial one is read through a copy.
      const file = join(scratch, seg.name);
      copyFileSync(seg.path, file);
      // It reads to the end of the valid WAL and exits non-zero there: its output is what counts.
      const out = await new Promise<string>((resolve) => {
        execFile(bin('pg_waldump'), ['-r', 'Transaction', file], { env: { ...process.env, TZ: 'UTC' }, maxBuffer: 1 << 30 }, (_err, stdout) => resolve(stdout ?? ''));
      });
      rmSync(file, { force: true });
      const last = commitTimes(out).at(-1);
      if (last !== undefined) return last;
    }
    return undefined;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * Streams one standby's WAL (`args`: its -h, -p and -U) into `dir` with pg_receivewal until `signal` aborts. pg_receivewal
 * resumes by itself from the newest segment in the directory (a `.partial` one is fetched again
 * from its start), so a stream that ends (the standby restarted, this process was killed) is
 * simply started again.
 */
export async function archiveWal(server: { name: string; args: string[]; env: NodeJS.ProcessEnv }, dir: string, signal: AbortSignal, log: (m: string) => void): Promise<void> {
  mkdirSync(dir, { recursive: true });
  while (!signal.aborted) {
    const leftover = await endLeftoverStreamer(dir, 'pg_receivewal');
    if (leftover !== undefined) log(`${server.name}: ended pg_receivewal ${leftover} left by a killed archiver`);
    const child = spawn(bin('pg_receivewal'), [...server.args, '--no-password', '--no-loop', '-D', dir], { stdio: ['ignore', 'ignore', 'pipe'], env: server.env });
    recordStreamer(dir, child.pid);
    let err = '';
    child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
    // SIGINT: pg_receivewal flushes what it received and exits 0.
    const stop = () => child.kill('SIGINT');
    signal.addEventListener('abort', stop, { once: true });
    const code = await new Promise<number | string>((r) => child.on('close', (c, s) => r(c ?? s ?? -1)));
    signal.removeEventListener('abort', stop);
    if (signal.aborted) return;
    log(`${server.name}: pg_receivewal exited ${code}${err ? `: ${err.trim().split('\n').at(-1)}` : ''}; restarting`);
    await sleep(1000, undefined, { signal }).catch(() => undefined);
  }
}

/**
 * Removes the archived segments that end at or before `lsn` (a restore from a base backup at
 * `lsn` starts in the segment holding it); returns the file names removed.
 */
export function pruneSegments(dir: string, lsn: string): string[] {
  const at = parseLsn(lsn);
  let names: string[];
  try {
    names = readdirSync(dir).sort();
  } catch {
    return [];
  }
  const removed: string[] = [];
  for (const seg of names.map((n) => parseSegment(dir, n)).filter((x) => x !== undefined)) {
    if (seg.start + SEGMENT > at) continue;
    rmSync(seg.path, { force: true });
    removed.push(seg.path.slice(dir.length + 1));
  }
  return removed;
}
