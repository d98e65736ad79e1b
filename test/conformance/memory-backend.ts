/**
 * A minimal in-memory ShardBackend that exists to test the conformance suite itself (the
 * abstract-level `test/self.js` idea): if the suite passes here and on SQLite and MySQL, it
 * depends on the interface, not on one engine. It is eager (createShard first), like MySQL.
 */
import { ShardKitError } from '../../src/errors.js';
import type {
  BackendCapabilities, Fleet, MappingItem, MappingPage, MappingRow, MappingScan, ObjectKey, SchemaDef, ShardBackend, ShardRef, ObjectRecord,
} from '../../src/storage/shard-backend.js';
import { checkLookupKey, checkPairs, checkScan, checkStoredId } from '../../src/storage/backend-args.js';

interface Shard {
  fleet: Fleet;
  objects: Map<string, { next: number; rows: Map<number, ObjectRecord> }>;
  mappings: Map<string, Map<bigint, Map<bigint, number>>>;
  lookups: Map<string, Map<string, bigint>>;
}

export class MemoryBackend implements ShardBackend {
  readonly kind = 'memory';
  readonly supports: BackendCapabilities = { lazyShardCreation: false };
  private readonly shards = new Map<string, Shard>();
  private closed = false;

  constructor(private readonly schema: SchemaDef) {}

  private key(ref: ShardRef): string {
    if (this.closed) throw new ShardKitError('CLOSED', 'closed');
    if (!/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/.test(ref.host) || ref.host.includes('..')) throw new ShardKitError('INVALID_ARGUMENT', 'bad host');
    return `${ref.host}/${ref.fleet}/${ref.shard}`;
  }

  private shard(ref: ShardRef, kind: 'types' | 'mappings' | 'keyspaces', table: string): Shard {
    const fleet: Fleet = kind === 'keyspaces' ? 'lookups' : 'objects';
    const known = kind === 'types' ? this.schema.types : kind === 'mappings' ? this.schema.mappings : this.schema.keyspaces;
    if (ref.fleet !== fleet || !known.some((t) => t.table === table)) throw new ShardKitError('INVALID_ARGUMENT', `unknown table ${table}`);
    const s = this.shards.get(this.key(ref));
    if (s === undefined) throw new ShardKitError('SHARD_UNAVAILABLE', `shard ${ref.shard} does not exist on ${ref.host}`);
    return s;
  }

  async createShard(ref: ShardRef): Promise<void> {
    const k = this.key(ref);
    if (this.shards.has(k)) return;
    const s: Shard = { fleet: ref.fleet, objects: new Map(), mappings: new Map(), lookups: new Map() };
    for (const t of this.schema.types) s.objects.set(t.table, { next: 1, rows: new Map() });
    for (const m of this.schema.mappings) s.mappings.set(m.table, new Map());
    for (const l of this.schema.keyspaces) s.lookups.set(l.table, new Map());
    this.shards.set(k, s);
  }

  async dropShard(ref: ShardRef): Promise<void> {
    this.shards.delete(this.key(ref));
  }

  async listShards(host: string, fleet: Fleet): Promise<number[]> {
    this.key({ host, fleet, shard: 0 });
    return [...this.shards.keys()].filter((k) => k.startsWith(`${host}/${fleet}/`)).map((k) => Number(k.split('/')[2])).sort((a, b) => a - b);
  }

  async insertObject(ref: ShardRef, table: string, data: string): Promise<ObjectRecord> {
    const t = this.shard(ref, 'types', table).objects.get(table)!;
    const row = { localId: t.next++, data, createdAt: new Date() };
    t.rows.set(row.localId, row);
    return row;
  }

  async getObjects(ref: ShardRef, keys: ObjectKey[]): Promise<(ObjectRecord | undefined)[]> {
    return keys.map((k) => this.shard(ref, 'types', k.table).objects.get(k.table)!.rows.get(k.localId));
  }

  async updateObject(ref: ShardRef, table: string, localId: number, fn: (data: string) => string | undefined): Promise<ObjectRecord | undefined> {
    const rows = this.shard(ref, 'types', table).objects.get(table)!.rows;
    const row = rows.get(localId);
    if (row === undefined) return undefined;
    const next = fn(row.data);
    if (next === undefined) return row;
    const updated = { ...row, data: next };
    rows.set(localId, updated);
    return updated;
  }

  async deleteObject(ref: ShardRef, table: string, localId: number): Promise<boolean> {
    return this.shard(ref, 'types', table).objects.get(table)!.rows.delete(localId);
  }

  async addMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint, sequence: number): Promise<void> {
    checkStoredId(fromId, 'from id');
    checkStoredId(toId, 'to id');
    const m = this.shard(ref, 'mappings', table).mappings.get(table)!;
    let list = m.get(fromId);
    if (list === undefined) m.set(fromId, (list = new Map()));
    list.set(toId, sequence);
  }

  async listMappings(ref: ShardRef, table: string, fromId: bigint, page: MappingPage): Promise<MappingItem[]> {
    const list = this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId) ?? new Map<bigint, number>();
    const cmp = (a: MappingItem, b: MappingItem) => a.sequence - b.sequence || (a.toId < b.toId ? -1 : a.toId > b.toId ? 1 : 0);
    let items = [...list].map(([toId, sequence]) => ({ toId, sequence })).sort(cmp);
    if (page.order === 'desc') items.reverse();
    const after = page.after;
    if (after !== undefined) items = items.filter((x) => (page.order === 'asc' ? cmp(x, after) > 0 : cmp(x, after) < 0));
    return items.slice(0, page.limit);
  }

  async removeMapping(ref: ShardRef, table: string, fromId: bigint, toId: bigint): Promise<boolean> {
    return this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId)?.delete(toId) ?? false;
  }

  async scanMappings(ref: ShardRef, table: string, page: MappingScan): Promise<MappingRow[]> {
    const byFrom = this.shard(ref, 'mappings', table).mappings.get(table)!;
    checkScan(page);
    const rows: MappingRow[] = [];
    for (const [fromId, list] of byFrom) for (const [toId, sequence] of list) rows.push({ fromId, toId, sequence });
    const cmp = (a: { fromId: bigint; toId: bigint }, b: { fromId: bigint; toId: bigint }) =>
      a.fromId < b.fromId ? -1 : a.fromId > b.fromId ? 1 : a.toId < b.toId ? -1 : a.toId > b.toId ? 1 : 0;
    rows.sort(cmp);
    const after = page.after;
    return (after === undefined ? rows : rows.filter((r) => cmp(r, after) > 0)).slice(0, page.limit);
  }

  async getMappings(ref: ShardRef, table: string, pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): Promise<(number | undefined)[]> {
    const byFrom = this.shard(ref, 'mappings', table).mappings.get(table)!;
    checkPairs(pairs);
    return pairs.map((p) => byFrom.get(p.fromId)?.get(p.toId));
  }

  async countMappings(ref: ShardRef, table: string, fromId: bigint): Promise<number> {
    return this.shard(ref, 'mappings', table).mappings.get(table)!.get(fromId)?.size ?? 0;
  }

  async putLookup(ref: ShardRef, table: string, key: string, value: bigint): Promise<void> {
    checkLookupKey(key);
    checkStoredId(value, 'lookup value');
    this.shard(ref, 'keyspaces', table).lookups.get(table)!.set(key, value);
  }

  async getLookup(ref: ShardRef, table: string, key: string): Promise<bigint | undefined> {
    checkLookupKey(key);
    return this.shard(ref, 'keyspaces', table).lookups.get(table)!.get(key);
  }

  async deleteLookup(ref: ShardRef, table: string, key: string): Promise<boolean> {
    checkLookupKey(key);
    return this.shard(ref, 'keyspaces', table).lookups.get(table)!.delete(key);
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}
