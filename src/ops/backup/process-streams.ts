import { spawn, type SpawnOptions } from 'node:child_process';
import { PassThrough, Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ShardKitError } from '../../errors.js';

const lastLines = (text: string) => text.trim().split('\n').slice(-3).join(' | ');

/**
 * The stdout of a tool (mariadb-dump, pg_basebackup) as a stream that ends only when the tool
 * exited 0, and fails otherwise: a dump cut short must never be stored as a complete object.
 */
export function toolOutput(command: string, args: string[], options: SpawnOptions = {}): Readable {
  const child = spawn(command, args, { ...options, stdio: ['ignore', 'pipe', 'pipe'] });
  const out = new PassThrough({ highWaterMark: 1 << 20 });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  child.stdout!.pipe(out, { end: false });
  child.on('error', (e) => out.destroy(new ShardKitError('MISSING_DEPENDENCY', `${command}: ${e.message}`)));
  child.on('close', (code, signal) => {
    if (code === 0) out.end();
    else out.destroy(new ShardKitError('INTERNAL', `${command} exited ${code ?? signal}: ${lastLines(err)}`));
  });
  // A consumer that gives up stops the tool too.
  out.on('close', () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  });
  return out;
}

/** Feeds `source` to a tool's stdin (mariadb, tar) and resolves when it exited 0. */
export async function toolInput(command: string, args: string[], source: Readable, options: SpawnOptions = {}): Promise<void> {
  const child = spawn(command, args, { ...options, stdio: ['pipe', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | string>((resolve, reject) => {
    child.on('error', (e) => reject(new ShardKitError('MISSING_DEPENDENCY', `${command}: ${e.message}`)));
    child.on('close', (code, signal) => resolve(code ?? signal ?? -1));
  });
  const fed = pipeline(source, child.stdin!).catch((e: Error) => e);
  const code = await exited;
  const feedError = await fed;
  if (code !== 0) throw new ShardKitError('INTERNAL', `${command} exited ${code}: ${lastLines(err)}`);
  if (feedError instanceof Error) throw new ShardKitError('INTERNAL', `feeding ${command}: ${feedError.message}`, { cause: feedError });
}

/** Counts the bytes that pass, telling `onBytes` at most every 250 ms and once at the end. */
export function byteCounter(onBytes: (bytes: number) => void): Transform {
  let bytes = 0;
  let toldAt = 0;
  return new Transform({
    highWaterMark: 1 << 20,
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      if (Date.now() - toldAt >= 250) {
        toldAt = Date.now();
        onBytes(bytes);
      }
      done(null, chunk);
    },
    flush(done) {
      onBytes(bytes);
      done();
    },
  });
}

/**
 * `first.pipe(...).pipe(last)` where an error anywhere fails the last stream: `.pipe` alone
 * forwards none, so a dump tool that dies mid-copy would leave the store waiting (or the process
 * crashing on an unhandled 'error').
 */
export function chain(first: Readable, ...rest: Transform[]): Readable {
  let out: Readable = first;
  const last = rest.at(-1) ?? first;
  for (const s of rest) {
    const from = out;
    from.on('error', (err) => last.destroy(err));
    out = from.pipe(s);
  }
  return last;
}
