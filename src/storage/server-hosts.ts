import { ShardKitError } from '../errors.js';
import { parseId } from '../ids/codec.js';
import { checkRef } from './backend-args.js';
import type { Fleet, MappingRow, SchemaDef, ShardRef } from './shard-backend.js';

/** What the backends for database servers (MySQL, PostgreSQL) share, whatever their client. */

export type TableKind = 'types' | 'mappings' | 'keyspaces';

/**
 * The table names a schema allows, by kind. Table names reach SQL only through check(): a name
 * outside the schema, or on the wrong fleet, never becomes an identifier.
 */
export class SchemaTables {
  private readonly tables: Record<TableKind, Set<string>>;

  constructor(readonly schema: SchemaDef) {
    this.tables = {
      types: new Set(schema.types.map((t) => t.table)),
      mappings: new Set(schema.mappings.map((m) => m.table)),
      keyspaces: new Set(schema.keyspaces.map((k) => k.table)),
    };
  }

  check(kind: TableKind, ref: ShardRef, table: string): void {
    checkRef(ref);
    const fleet: Fleet = kind === 'keyspaces' ? 'lookups' : 'objects';
    if (ref.fleet !== fleet) throw new ShardKitError('INVALID_ARGUMENT', `table ${JSON.stringify(String(table).slice(0, 70))} is not on the ${ref.fleet} fleet`);
    if (!this.tables[kind].has(table)) throw new ShardKitError('INVALID_ARGUMENT', `unknown table ${JSON.stringify(String(table).slice(0, 70))}`);
  }
}

/** The counters every host pool keeps. */
export interface CountingPool {
  queries: number;
  inFlight: number;
  maxInFlight: number;
  close(): Promise<void>;
}

/** One pool per declared host, created on first use; counters for benchmarks and tests. */
export class HostPools<P extends CountingPool, A> {
  private readonly pools = new Map<string, P>();

  constructor(
    private readonly hosts: Record<string, A>,
    private readonly create: (host: string, address: A) => P,
  ) {}

  get(host: string): P {
    let pool = this.pools.get(host);
    if (pool) return pool;
    const address = Object.hasOwn(this.hosts, host) ? this.hosts[host] : undefined;
    if (!address) throw new ShardKitError('INVALID_CONFIG', `host ${host} is not declared in config "hosts"`);
    pool = this.create(host, address);
    this.pools.set(host, pool);
    return pool;
  }

  /** Round trips sent to each host since creation. */
  roundTrips(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const [name, pool] of this.pools) out[name] = pool.queries;
    return out;
  }

  /** Per host: round trips and the most statements in flight at once since the last reset. */
  stats(options: { reset?: boolean } = {}): Record<string, { queries: number; maxInFlight: number }> {
    const out: Record<string, { queries: number; maxInFlight: number }> = {};
    for (const [name, pool] of this.pools) {
      out[name] = { queries: pool.queries, maxInFlight: pool.maxInFlight };
      if (options.reset) {
        pool.queries = 0;
        pool.maxInFlight = pool.inFlight;
      }
    }
    return out;
  }

  async closeAll(): Promise<void> {
    const pools = [...this.pools.values()];
    this.pools.clear();
    await Promise.all(pools.map((p) => p.close()));
  }
}

/** A mapping row as the MySQL and PostgreSQL drivers return it (64-bit columns as strings). */
export interface MappingRowText {
  from_id: string;
  to_id: string;
  sequence: string;
}

export function toMappingRow(r: MappingRowText): MappingRow {
  return { fromId: parseId(r.from_id), toId: parseId(r.to_id), sequence: Number(r.sequence) };
}

/** getMappings' answer from the rows a server found: each asked pair's sequence in request order, undefined where absent. */
export function sequencesInOrder(rows: MappingRowText[], pairs: ReadonlyArray<{ fromId: bigint; toId: bigint }>): (number | undefined)[] {
  const found = new Map(rows.map((r) => [`${parseId(r.from_id)}:${parseId(r.to_id)}`, Number(r.sequence)]));
  return pairs.map((p) => found.get(`${p.fromId}:${p.toId}`));
}
