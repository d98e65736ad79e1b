/**
 * A minimal in-memory ShardBackend that exists to test the conformance suite itself (the
 * abstract-level `test/self.js` idea): if the suite passes here and on SQLite and MySQL, it
 * depends on the interface, not on one engine. It is eager (createShard first), like MySQL.
 * Like every backend it sits in CheckedBackend, which checks arguments and the closed state:
 * the _methods below only store.
 */
import { ShardKitError } from '../../src/errors.js';
import { CheckedBackend } from '../../src/storage/checked-backend.js';
import type {
  BackendCapabilities, Fleet, MappingItem, MappingPage, MappingRow, MappingScan, ObjectKey, SchemaDef, ShardRef, ObjectRecord,
} from '../../src/storage/shard-backend.js';

interface Shard {
  fleet: Fleet;
  objects: Map<string, { next: number; rows: Map<number, ObjectRecord> }>;
  mappings: Map<string, Map<bigint, Map<bigint, number>>>;
  lookups: Map<string, Map<string, bigint>>;
}

export class MemoryBackend extends CheckedBackend {
  readonly kind = 'memory';
  readonly supports: BackendCapabilities = { lazyShardCreation: false };
  private readonly shards = new Map<string, Shard>();

  constructor(schema: SchemaDef) {
    super(schema, 'memory');
  }

  private key(ref: ShardRef): string {
    return `${ref.host}/${ref.fleet}/${ref.shard}`;
  }

  private shard(ref: ShardRef, _kind: 'types' | 'mappings' | 'keyspaces', _table: string): Shard {
    const s = this.shards.get(this.key(ref));
    if (s === undefined) throw new ShardKitError('SHARD_UNAVAILABLE', `shard ${ref.shard} does not exist on ${ref.host}`);
    return s;
  }

  protected async _createShard(ref: ShardRef): Promise<void> {
    const k = this.key(ref);
    if (this.shards.has(k)) return;
    const s: Shard = { fleet: ref.fleet, objects: new Map(), mappings: new Map(), lookups: new Map() };
    for (const t of this.schema.types) s.objects.set(t.table, { next: 1, rows: new Map() });
    for (const m of this.schema.mappings) s.mappings.set(m.table, new Map());
    for (const l of this.schema.keyspaces) s.lookups.set(l.table, new Map());
    this.shards.set(k, s);
  }

  protected async _dropShard(ref: ShardRef): Promise<void> {
    this.shards.delete(this.key(ref));
  }

  protected async _listShards(host: string, fleet: Fleet): Promise<number[]> {
    return [...this.shards.keys()].filter((k) => k.startsWith(`${host}/${fleet}/`)).map((k) => Number(k.split('/')[2])).sort((a, b) => a - b);
  }

  protected async _insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    const t = this.shard(ref, 'types', table).objects.get(table)!;
    const row = { localId: t.next++, data, createdAt: new Date() };
    t.rows.set(row.localId, row);
    return row;
  }

  protected async _getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    return keys.map((k) => this.shard(ref, 'types', k.table).objects.get(k.table)!.rows.get(k.localId));
  }

  protected async _updateObject(ref: ShardRef, table: string, localId: number, fn: (data: string) => string | undefined): Promise<ObjectRecord | undefined> {
    const rows = this.shard(ref, 'types', table).objects.get(table)!.rows;
    const row = rows.get(localId);
    if (row === undefined) return undefined;
    const next = fn(row.data);
    if (next === undefined) return row;
    const updated = { ...row, data: next };
    rows.set(localId, updated);
    return updated;
  }

  protected async _deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    return this.shard(ref, 'types', table).objects.get(table)!.rows.delete(localId);
  }

  protected async _addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    const m = this.shard(ref, 'mappings', table).mappings.get(table)!;
    let list = m.get(fromId);
    if (list === undefined) m.set(fromId, (list = new Map()));
    list.set(toId, sequence);
  }

  protected async _listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    const list = this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId) ?? new Map<bigint, number>();
    const cmp = (a: MappingItem, b: MappingItem) => a.sequence - b.sequence || (a.toId < b.toId ? -1 : a.toId > b.toId ? 1 : 0);
    let items = [...list].map(([toId, sequence]) => ({ toId, sequence })).sort(cmp);
    if (page.order === 'desc') items.reverse();
    const after = page.after;
    if (after !== undefined) items = items.filter((x) => (page.order === 'asc' ? cmp(x, after) > 0 : cmp(x, after) < 0));
    return items.slice(0, page.limit);
  }

  protected async _removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    return this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId)?.delete(toId) ?? false;
  }

  protected async _scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    const byFrom = this.shard(ref, 'mappings', table).mappings.get(table)!;
    const rows: MappingRow[] = [];
    for (const [fromId, list] of byFrom) for (const [toId, sequence] of list) rows.push({ fromId, toId, sequence });
    const cmp = (a: { fromId: bigint; toId: bigint }, b: { fromId: bigint; toId: bigint }) =>
      a.fromId < b.fromId ? -1 : a.fromId > b.fromId ? 1 : a.toId < b.toId ? -1 : a.toId > b.toId ? 1 : 0;
    rows.sort(cmp);
    const after = page.after;
    return (after === undefined ? rows : rows.filter((r) => cmp(r, after) > 0)).slice(0, page.limit);
  }

  protected async _getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]> {
    const byFrom = this.shard(ref, 'mappings', table).mappings.get(table)!;
    return pairs.map((p) => byFrom.get(p.fromId)?.get(p.toId));
  }

  protected async _countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    return this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId)?.size ?? 0;
  }

  protected async _countObjects(ref: ShardRef): Promise<number> {
    let n = 0;
    for (const t of this.shard(ref, 'types', '').objects.values()) n += t.rows.size;
    return n;
  }

  protected async _putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    this.shard(ref, 'keyspaces', table).lookups.get(table)!.set(key, value);
  }

  protected async _getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    return this.shard(ref, 'keyspaces', table).lookups.get(table)!.get(key);
  }

  protected async _deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    return this.shard(ref, 'keyspaces', table).lookups.get(table)!.delete(key);
  }

  protected _close(): void {}
}
