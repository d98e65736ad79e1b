import type { ZodType } from 'zod';
import { ShardKitError } from '../errors.js';

/**
 * Small records kept beside the shard map, one per name (move progress, service heartbeats):
 * written often, read by few, never watched by services, so a write here makes no map version.
 * Each store keeps them its own way (a directory of files, etcd keys under a prefix, memory).
 */
export interface RecordSet<T> {
  /** Every record, by name. A record that does not parse is INVALID_CONFIG naming it. */
  readAll(): Promise<Map<string, T>>;
  /** Replaces record `name` (last writer wins: each record has one writer). */
  put(name: string, value: T): Promise<void>;
  /** Removes record `name`; removing a missing one is not an error. */
  remove(name: string): Promise<void>;
}

/** What a kind of record is: its names, its schema, and how errors call it. */
export interface RecordKind<T> {
  /** "move progress record": the start of error messages. */
  what: string;
  /** Names are used as file names and etcd keys, so they are checked before any use. */
  namePattern: RegExp;
  schema: ZodType<T>;
}

/** `name` if it is a valid name of this kind of record, else INVALID_ARGUMENT (only a caller's bug gets here). */
export function checkRecordName<T>(kind: RecordKind<T>, name: string): string {
  if (typeof name !== 'string' || !kind.namePattern.test(name)) throw new ShardKitError('INVALID_ARGUMENT', `not a valid ${kind.what} name: ${JSON.stringify(String(name).slice(0, 80))}`);
  return name;
}

/** Parses one stored record; `where` names it in the error (a file path, an etcd key). */
export function parseRecord<T>(kind: RecordKind<T>, text: string, where: string): T {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ShardKitError('INVALID_CONFIG', `${kind.what} ${where} is not valid JSON: ${(err as Error).message}`);
  }
  const parsed = kind.schema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ShardKitError('INVALID_CONFIG', `${kind.what} ${where}: ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

/** The text a store writes for `value`: checked against the schema first, so a store never holds a record it would refuse to read. */
export function recordText<T>(kind: RecordKind<T>, value: T, where: string): string {
  return JSON.stringify(parseRecord(kind, JSON.stringify(value), where));
}

/** Records kept in memory (shared through a MemoryTopologyBacking). */
export class MemoryRecordSet<T> implements RecordSet<T> {
  private readonly records = new Map<string, string>();

  constructor(private readonly kind: RecordKind<T>) {}

  async readAll(): Promise<Map<string, T>> {
    return new Map([...this.records].map(([name, text]) => [name, parseRecord(this.kind, text, name)]));
  }

  async put(name: string, value: T): Promise<void> {
    this.records.set(checkRecordName(this.kind, name), recordText(this.kind, value, name));
  }

  async remove(name: string): Promise<void> {
    this.records.delete(checkRecordName(this.kind, name));
  }
}

/**
 * How long a record that ran out is kept before a reader deletes it: a process killed with -9
 * never removes its own heartbeat or heal status, and readers already skip it as expired; an
 * hour leaves it for an operator looking into that death, then the store does not grow forever.
 */
export const EXPIRED_RECORD_KEEP_MS = 3_600_000;

/**
 * Deletes the records of `records` (just read from `set`) that ran out more than `keepMs` before
 * `now`. Best effort: a failed delete is retried by the next reader. Returns the names deleted.
 */
export async function pruneExpired<T extends { at: number; ttlMs: number }>(set: RecordSet<T>, records: ReadonlyMap<string, T>, now: number, keepMs = EXPIRED_RECORD_KEEP_MS): Promise<string[]> {
  const dead = [...records].filter(([, r]) => now > r.at + r.ttlMs + keepMs).map(([name]) => name);
  const removed: string[] = [];
  for (const name of dead) {
    if (await set.remove(name).then(() => true, () => false)) removed.push(name);
  }
  return removed;
}
