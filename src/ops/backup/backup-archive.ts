import { ShardKitError } from '../../errors.js';
import type { BackupEngine } from './backup-engine.js';
import type { BackupTarget } from './backup-target.js';

/**
 * `shardkit backup archive`: every pair's log streamed into the target until `signal` aborts
 * (SIGTERM). Killed, it is simply started again: each stream resumes from its newest file.
 */
export async function archiveLogs(engine: BackupEngine, target: BackupTarget, signal: AbortSignal, log: (m: string) => void = () => undefined): Promise<void> {
  if (engine.archive === undefined) throw new ShardKitError('INVALID_ARGUMENT', `log archiving is not built for ${engine.kind} yet`);
  await engine.archive(target, signal, log);
}

/** A --to-time value: an ISO 8601 time with a zone, or epoch milliseconds. */
export function parseTime(text: string): number {
  if (/^\d{10,16}$/.test(text)) return Number(text);
  const ms = /(Z|[+-]\d{2}:?\d{2})$/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isFinite(ms)) throw new ShardKitError('INVALID_ARGUMENT', `--to-time must be an ISO time with a zone (2026-11-28T10:42:00Z) or epoch ms, got ${JSON.stringify(text.slice(0, 40))}`);
  return ms;
}
