import { ShardKitError, isShardKitError } from '../../errors.js';
import { pinterestId } from '../../ids/pinterest-id.js';
import { encodeData } from '../../kit/json-data.js';
import type { KitObject } from '../../kit/kit-object.js';
import type { ShardKit } from '../../kit/shard-kit.js';
import type { JsonObject, JsonValue } from '../../kit/types.js';
import { CHANGE_KINDS, ID_KINDS, type RawValue, type SourceColumn } from './column-kinds.js';
import { startOf } from './high-water.js';
import { MigrationStateStore, STATE_KEY, type TableMigrationState } from './migration-state.js';
import { RowSkip, rowData, rowKey, type RowShape } from './row-data.js';
import type { SourcePosition, TableSource } from './table-source.js';
import { eachLimit } from '../each-limit.js';

/** `--mapping board_id:board_has_pins[:board_old_id]`. */
export interface MappingSpec {
  /** The source column holding the old id of the mapping's `from` object. */
  column: string;
  mapping: string;
  /** Keyspace where that old id resolves (default `<from type>_old_id`). */
  keyspace?: string;
}

export interface TableMigrationOptions {
  type: string;
  idColumn: string;
  changedColumn: string;
  /** Lookup keyspace of the old ids (default `<type>_old_id`); it also holds the state key. */
  keyspace?: string;
  /** Object type of the state object (default `migration`). */
  stateType?: string;
  mappings?: MappingSpec[];
  /** Columns whose text is parsed into nested JSON. */
  jsonColumns?: string[];
  /** The object's data is this column's JSON object. */
  dataColumn?: string;
  /** Rows per source page (default 500). */
  batch?: number;
  /** Target writes in flight (default 16). */
  concurrency?: number;
  /** Seconds (or versions) re-read below the high-water mark (default 5). */
  overlapSeconds?: number;
  /** The last pass: the source must be read-only; a second pass must find nothing. */
  final?: boolean;
  /** Ignore the high-water mark and read every row (also adds mappings of unchanged rows). */
  fromStart?: boolean;
  /** Stops after the current page (checkpointed); the report says interrupted. */
  signal?: AbortSignal;
  onStart?(info: { total: number; from: string | null; pass: 'copy' | 'verify' }): void;
  onProgress?(p: PassCounts & { total: number }): void;
  onSkip?(skip: Skip): void;
}

export interface Skip {
  /** The old id (as text), or null when the row had none. */
  id: string | null;
  reason: string;
}

export interface PassCounts {
  scanned: number;
  created: number;
  updated: number;
  unchanged: number;
  skipped: number;
  mappingsAdded: number;
  mappingsRemoved: number;
  mappingsSkipped: number;
}

export interface TableMigrationReport extends PassCounts {
  source: string;
  type: string;
  keyspace: string;
  stateObject: string;
  final: boolean;
  fromStart: boolean;
  /** created + updated: the delta this run copied. */
  copied: number;
  /** The high-water mark before and after (server text), and where this run began reading. */
  highWater: { before: string | null; readFrom: string | null; after: string | null };
  /** Skipped rows (the first 1000) with the reason of each; `skipped` counts all. */
  skips: Skip[];
  /** Rows with a NULL id or NULL changed column: never read, so never copied. */
  untracked: { count: number; examples: string[] };
  /** --final: how the source was found read-only, and the verifying pass's delta (must be 0). */
  readOnly?: string;
  verifyCopied?: number;
  interrupted: boolean;
  elapsedMs: number;
  rowsPerSecond: number;
}

const DEFAULT_BATCH = 500;
const DEFAULT_CONCURRENCY = 16;
const DEFAULT_OVERLAP = 5;
const MAX_SKIPS_KEPT = 1000;

/** Runs `fn` over `items` with at most `limit` at once; the first failure rejects. */

/** A row ready to write. */
interface Prepared {
  key: string;
  data: JsonObject;
  text: string;
  /** Old ids of the `from` objects of each mapping (null: no mapping for this row). */
  fks: (string | null)[];
  sequence: number;
}

/** The text of a JSON value as a lookup key (an old id stored in the object's data). */
function keyOfJson(value: JsonValue | undefined): string | null {
  if (typeof value === 'number') return String(value);
  if (typeof value === 'string' && value !== '') return value;
  return null;
}

/**
 * One run of a table migration (docs/migrate.md, "From a table"): reads the source rows changed
 * since the high-water mark in (changed, id) order, a page at a time, and makes each row an
 * object of `type` whose old id is a key of the lookup keyspace, so runs update rather than
 * duplicate. The state object is checkpointed after every page, so a run stopped anywhere
 * (Ctrl-C, kill -9) resumes there. Every target write goes through the kit.
 */
export class TableMigration {
  private readonly opts: Required<Pick<TableMigrationOptions, 'batch' | 'concurrency' | 'overlapSeconds'>> & TableMigrationOptions;
  private readonly keyspace: string;
  private readonly stateType: string;
  private readonly mappings: Array<MappingSpec & { keyspace: string; index: number; fromType: string }> = [];
  private shape!: RowShape;
  private changedKind!: SourceColumn['kind'];
  private store!: MigrationStateStore;
  private readonly fkCache = new Map<string, bigint | null>();
  private skips: Skip[] = [];

  constructor(private readonly kit: ShardKit, private readonly source: TableSource, private readonly sourceName: string, private readonly query: string, options: TableMigrationOptions) {
    this.opts = { batch: DEFAULT_BATCH, concurrency: DEFAULT_CONCURRENCY, overlapSeconds: DEFAULT_OVERLAP, ...options };
    this.keyspace = options.keyspace ?? `${options.type}_old_id`;
    this.stateType = options.stateType ?? 'migration';
  }

  /** Every check that needs no write: schema names, the query's columns. Nothing is written before it passes. */
  private async check(): Promise<void> {
    const { type, idColumn, changedColumn } = this.opts;
    const schema = this.kit.schema;
    const typeDef = schema.types.find((t) => t.name === type);
    if (typeDef === undefined) throw new ShardKitError('UNKNOWN_TYPE', `--type ${type} is not a type of the target's schema (it has ${schema.types.map((t) => t.name).join(', ') || 'none'})`);
    if (!schema.keyspaces.some((k) => k.name === this.keyspace)) {
      throw new ShardKitError('UNKNOWN_KEYSPACE', `the target's schema has no keyspace ${this.keyspace} for the old ids: add "${this.keyspace}" to schema.keyspaces (then shardkit schema apply), or pass --keyspace`);
    }
    if (!schema.types.some((t) => t.name === this.stateType)) {
      throw new ShardKitError('UNKNOWN_TYPE', `the target's schema has no type ${this.stateType} for the migration's state: add {"name": "${this.stateType}", "id": <an unused type id>} to schema.types (then shardkit schema apply), or pass --state-type`);
    }
    if (this.stateType === type) throw new ShardKitError('INVALID_ARGUMENT', '--state-type must differ from --type');
    if (!Number.isSafeInteger(this.opts.batch) || this.opts.batch < 1 || this.opts.batch > 100_000) throw new ShardKitError('INVALID_ARGUMENT', '--batch must be in 1..100000');
    if (!(this.opts.overlapSeconds >= 0)) throw new ShardKitError('INVALID_ARGUMENT', '--overlap must be >= 0');

    const columns = await this.source.describe();
    const names = columns.map((c) => c.name);
    const list = names.join(', ');
    const dup = names.find((n, i) => names.indexOf(n) !== i);
    if (dup !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `the query returns two columns named ${dup}: give them distinct names (AS)`);
    const index = (name: string, flag: string) => {
      const i = names.indexOf(name);
      if (i < 0) throw new ShardKitError('INVALID_ARGUMENT', `the query returns no column ${name} (${flag}); it returns ${list}`);
      return i;
    };
    const id = index(idColumn, '--id-column');
    const changed = index(changedColumn, '--changed-column');
    if (!ID_KINDS.has(columns[id]!.kind)) throw new ShardKitError('INVALID_ARGUMENT', `--id-column ${idColumn} is ${columns[id]!.typeName}: an id must be an integer, decimal or text column`);
    if (!CHANGE_KINDS.has(columns[changed]!.kind)) {
      throw new ShardKitError('INVALID_ARGUMENT', `--changed-column ${changedColumn} is ${columns[changed]!.typeName}: it must be a timestamp, datetime, date or integer column`);
    }
    const json = new Set(this.opts.jsonColumns ?? []);
    for (const c of json) index(c, '--json');
    let dataColumn: number | undefined;
    if (this.opts.dataColumn !== undefined) dataColumn = index(this.opts.dataColumn, '--data-column');
    for (const spec of this.opts.mappings ?? []) {
      const i = index(spec.column, `--mapping ${spec.column}:${spec.mapping}`);
      const def = schema.mappings.find((m) => m.name === spec.mapping);
      if (def === undefined) throw new ShardKitError('UNKNOWN_MAPPING', `--mapping: ${spec.mapping} is not a mapping of the target's schema`);
      if (def.to !== type) throw new ShardKitError('INVALID_ARGUMENT', `--mapping: ${spec.mapping} goes from ${def.from} to ${def.to}, not to ${type}`);
      const keyspace = spec.keyspace ?? `${def.from}_old_id`;
      if (!schema.keyspaces.some((k) => k.name === keyspace)) throw new ShardKitError('UNKNOWN_KEYSPACE', `--mapping ${spec.column}:${spec.mapping}: no keyspace ${keyspace} to resolve old ${def.from} ids (name it as a third part: ${spec.column}:${spec.mapping}:<keyspace>)`);
      this.mappings.push({ ...spec, keyspace, index: i, fromType: def.from });
    }
    this.shape = { columns, id, changed, json, ...(dataColumn !== undefined ? { dataColumn } : {}) };
    this.changedKind = columns[changed]!.kind;
    this.source.bind(idColumn, changedColumn);
  }

  async run(): Promise<TableMigrationReport> {
    const started = Date.now();
    await this.check();
    this.store = await MigrationStateStore.open(this.kit, this.keyspace, this.stateType);
    const before = this.store.state;
    if (before !== undefined && (before.type !== this.opts.type || before.idColumn !== this.opts.idColumn)) {
      throw new ShardKitError('ALREADY_EXISTS', `keyspace ${this.keyspace} holds the migration of ${before.type} rows keyed by ${before.idColumn} from ${before.source}: pass another --keyspace`);
    }
    let readOnly: string | undefined;
    if (this.opts.final) {
      const ro = await this.source.readOnly();
      if (!ro.readOnly) {
        throw new ShardKitError('PRECONDITION_FAILED', `--final needs a read-only source, and it takes writes (${ro.how}): stop the writers and make it read-only first (docs/migrate.md)`);
      }
      readOnly = ro.how;
    }

    if (before === undefined) {
      await this.refuseForeignKeys();
      // The state object exists before the first row is written: a first run that dies in its
      // first page leaves keys behind, and the rerun must see them as this migration's own.
      await this.checkpoint(null, null);
    }

    const highBefore = before?.highWater ?? null;
    const readFrom = this.opts.fromStart || highBefore === null ? null : startOf(highBefore, this.changedKind, this.opts.overlapSeconds);
    const untracked = await this.source.untracked();
    const counts = emptyCounts();
    const pass = await this.pass(readFrom, counts, 'copy');
    let verifyCopied: number | undefined;
    if (this.opts.final && !pass.interrupted) {
      // The source is read-only: a second pass over the same rows must find nothing to copy.
      const verify = emptyCounts();
      const again = await this.pass(readFrom, verify, 'verify');
      verifyCopied = verify.created + verify.updated;
      if (verifyCopied > 0 && !again.interrupted) {
        throw new ShardKitError('PRECONDITION_FAILED', `--final: the source changed during the final pass (${verifyCopied} rows copied again): it is not read-only for every writer`);
      }
    }
    const elapsedMs = Date.now() - started;
    const report: TableMigrationReport = {
      source: this.sourceName,
      type: this.opts.type,
      keyspace: this.keyspace,
      stateObject: String(this.store.objectId ?? ''),
      final: this.opts.final === true,
      fromStart: this.opts.fromStart === true,
      ...counts,
      copied: counts.created + counts.updated,
      highWater: { before: highBefore, readFrom, after: this.store.state?.highWater ?? highBefore },
      skips: this.skips,
      untracked,
      ...(readOnly !== undefined ? { readOnly } : {}),
      ...(verifyCopied !== undefined ? { verifyCopied } : {}),
      interrupted: pass.interrupted,
      elapsedMs,
      rowsPerSecond: elapsedMs > 0 ? Math.round((counts.scanned * 1000) / elapsedMs) : 0,
    };
    await this.checkpoint(this.store.state?.highWater ?? highBefore, {
      at: new Date().toISOString(),
      copied: report.copied, created: report.created, updated: report.updated, unchanged: report.unchanged, skipped: report.skipped,
      final: report.final, interrupted: report.interrupted,
    }, this.opts.final === true && !pass.interrupted);
    report.stateObject = String(this.store.objectId);
    return report;
  }

  /**
   * A first run into a keyspace that already maps some of the source's ids (written by hand or
   * by another tool) would silently adopt those objects: refuse, before any write.
   */
  private async refuseForeignKeys(): Promise<void> {
    const rows = await this.source.read({ limit: Math.min(this.opts.batch, 1000) });
    const keys = rows.flatMap((raw) => {
      try {
        return [rowKey(this.shape, raw)];
      } catch {
        return [];
      }
    });
    const found: string[] = [];
    await eachLimit(keys, this.opts.concurrency, async (key) => {
      if (key !== STATE_KEY && (await this.kit.lookups.get(this.keyspace, key)) !== undefined) found.push(key);
    });
    if (found.length > 0) {
      throw new ShardKitError('ALREADY_EXISTS', `keyspace ${this.keyspace} already maps ids of this source (${found.slice(0, 5).join(', ')}${found.length > 5 ? ', …' : ''}) but holds no migration state: the target holds other data for these ids; pass another --keyspace or clear it`);
    }
  }

  private async checkpoint(highWater: string | null, lastRun: JsonObject | null, final = false): Promise<void> {
    const prev = this.store.state;
    const next: TableMigrationState = {
      kind: 'shardkit-table-migration',
      source: this.sourceName,
      query: this.query,
      type: this.opts.type,
      idColumn: this.opts.idColumn,
      changedColumn: this.opts.changedColumn,
      highWater,
      runs: (prev?.runs ?? 0) + (lastRun !== null ? 1 : 0),
      finalAt: final ? new Date().toISOString() : (prev?.finalAt ?? null),
      lastRun: lastRun ?? prev?.lastRun ?? null,
    };
    await this.store.save(next);
  }

  private async pass(from: string | null, counts: PassCounts, kind: 'copy' | 'verify'): Promise<{ interrupted: boolean }> {
    const total = await this.source.count(from ?? undefined);
    this.opts.onStart?.({ total, from, pass: kind });
    let after: SourcePosition | undefined;
    for (;;) {
      if (this.opts.signal?.aborted) return { interrupted: true };
      const rows = await this.source.read({ ...(from !== null ? { from } : {}), ...(after ? { after } : {}), limit: this.opts.batch });
      if (rows.length === 0) return { interrupted: false };
      await this.page(rows, counts);
      const last = rows[rows.length - 1]!;
      after = { changed: String(last[this.shape.changed]), id: String(last[this.shape.id]) };
      // Every row up to `after` is written: the next run may start there (minus the overlap).
      if (kind === 'copy') await this.checkpoint(after.changed, null);
      this.opts.onProgress?.({ ...counts, total });
      if (rows.length < this.opts.batch) return { interrupted: false };
    }
  }

  private skip(counts: PassCounts, id: string | null, reason: string): void {
    counts.skipped++;
    const s = { id, reason };
    if (this.skips.length < MAX_SKIPS_KEPT) this.skips.push(s);
    this.opts.onSkip?.(s);
  }

  private prepare(raw: RawValue[], counts: PassCounts, seen: Set<string>): Prepared | undefined {
    let key: string | null = null;
    try {
      key = rowKey(this.shape, raw);
      if (key === STATE_KEY) throw new RowSkip(`id ${STATE_KEY} is the key this migration keeps its state under`);
      if (seen.has(key)) throw new RowSkip('the query returned this id twice in one page (ids must be unique)');
      seen.add(key);
      const data = rowData(this.shape, raw);
      let text: string;
      try {
        text = encodeData(data);
      } catch (err) {
        throw new RowSkip(isShardKitError(err) ? err.message : String(err));
      }
      const fks = this.mappings.map((m) => {
        const v = raw[m.index] ?? null;
        return v === null ? null : Buffer.isBuffer(v) ? v.toString('utf8') : v;
      });
      const sequence = /^[0-9]{1,16}$/.test(key) && Number.isSafeInteger(Number(key)) ? Number(key) : 0;
      return { key, data, text, fks, sequence };
    } catch (err) {
      if (err instanceof RowSkip) {
        this.skip(counts, key, err.reason);
        return undefined;
      }
      throw err;
    }
  }

  /** The object an old `from` id was migrated to, or null (cached for the run). */
  private async resolveFk(keyspace: string, key: string): Promise<bigint | null> {
    const cacheKey = `${keyspace}\n${key}`;
    const hit = this.fkCache.get(cacheKey);
    if (hit !== undefined) return hit;
    const id = (await this.kit.lookups.get(keyspace, key)) ?? null;
    // Only hits are remembered: a from object migrated later in this run is found then.
    if (id !== null) this.fkCache.set(cacheKey, id);
    return id;
  }

  private async page(rows: RawValue[][], counts: PassCounts): Promise<void> {
    const seen = new Set<string>();
    const prepared: Prepared[] = [];
    for (const raw of rows) {
      counts.scanned++;
      const p = this.prepare(raw, counts, seen);
      if (p) prepared.push(p);
    }
    // Which rows were copied before: their lookups, then their objects in one multi-get.
    const existing = new Map<string, bigint>();
    await eachLimit(prepared, this.opts.concurrency, async (p) => {
      const id = await this.kit.lookups.get(this.keyspace, p.key);
      if (id !== undefined) existing.set(p.key, id);
    });
    const ids = [...existing.values()];
    const objects = new Map<bigint, KitObject | undefined>();
    const typeId = this.kit.schema.types.find((t) => t.name === this.opts.type)!.id;
    const sameType = ids.filter((id) => pinterestId.decode(id).type === typeId);
    const got = sameType.length > 0 ? await this.kit.objects.getMany(sameType) : [];
    sameType.forEach((id, i) => objects.set(id, got[i]));

    await eachLimit(prepared, this.opts.concurrency, async (p) => {
      const froms = await Promise.all(this.mappings.map((m, i) => (p.fks[i] === null ? Promise.resolve(null) : this.resolveFk(m.keyspace, p.fks[i]!))));
      const oldId = existing.get(p.key);
      let id: bigint;
      let previous: JsonObject | undefined;
      if (oldId === undefined) {
        const near = froms.find((f) => f !== null) ?? undefined;
        const obj = await this.kit.objects.create(this.opts.type, p.data, near !== undefined ? { near } : {});
        // A kill -9 between these two lines leaves this object without its key: the rerun
        // copies the row again, and the object stays behind, unreachable (docs/migrate.md).
        await this.kit.lookups.put(this.keyspace, p.key, obj.id);
        id = obj.id;
        counts.created++;
      } else {
        if (pinterestId.decode(oldId).type !== typeId) {
          this.skip(counts, p.key, `the keyspace maps this id to ${oldId}, which is not a ${this.opts.type}`);
          return;
        }
        const obj = objects.get(oldId);
        if (obj === undefined) {
          this.skip(counts, p.key, `its object ${oldId} was deleted in shardkit; not recreated`);
          return;
        }
        id = oldId;
        if (obj.storedText === p.text) {
          counts.unchanged++;
          // A full pass (--from-start) also adds the mappings a first pass had to skip.
          if (this.opts.fromStart) await this.addMappings(p, id, froms, counts);
          return;
        }
        previous = obj.data;
        await this.kit.objects.update(id, () => p.data);
        counts.updated++;
      }
      await this.addMappings(p, id, froms, counts, previous);
    });
  }

  private async addMappings(p: Prepared, id: bigint, froms: (bigint | null)[], counts: PassCounts, previous?: JsonObject): Promise<void> {
    for (const [i, m] of this.mappings.entries()) {
      const fk = p.fks[i] ?? null;
      // The row moved to another `from` (a pin to another board): drop the old pair.
      if (previous !== undefined && this.shape.dataColumn === undefined) {
        const oldFk = keyOfJson(previous[m.column]);
        if (oldFk !== null && oldFk !== fk) {
          const oldFrom = await this.resolveFk(m.keyspace, oldFk);
          if (oldFrom !== null && (await this.kit.mappings.remove(m.mapping, oldFrom, id))) counts.mappingsRemoved++;
        }
      }
      if (fk === null) continue;
      const from = froms[i] ?? null;
      if (from === null) {
        counts.mappingsSkipped++;
        this.skips.length < MAX_SKIPS_KEPT && this.skips.push({ id: p.key, reason: `mapping ${m.mapping}: ${m.fromType} ${fk} is not migrated (no key ${fk} in ${m.keyspace}); the row was copied without it` });
        this.opts.onSkip?.({ id: p.key, reason: `mapping ${m.mapping}: ${m.fromType} ${fk} is not migrated` });
        continue;
      }
      await this.kit.mappings.add(m.mapping, from, id, { sequence: p.sequence });
      counts.mappingsAdded++;
    }
  }
}

function emptyCounts(): PassCounts {
  return { scanned: 0, created: 0, updated: 0, unchanged: 0, skipped: 0, mappingsAdded: 0, mappingsRemoved: 0, mappingsSkipped: 0 };
}
