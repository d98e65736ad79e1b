import { ShardKitError } from '../errors.js';
import { checkRef } from './backend-args.js';
import type { Fleet, SchemaDef, ShardRef } from './shard-backend.js';

export type TableKind = 'types' | 'mappings' | 'keyspaces';

/** Host names remembered as valid; past this many the regex check simply runs again. */
const MAX_KNOWN_HOSTS = 10_000;

/**
 * The table names a schema allows, by kind. Table names reach SQL only through check(): a name
 * outside the schema, or on the wrong fleet, never becomes an identifier.
 */
export class SchemaTables {
  private readonly tables: Record<TableKind, Set<string>>;
  /** Hosts whose name passed checkHost: the check is on the path of every call. */
  private readonly knownHosts = new Set<string>();

  constructor(readonly schema: SchemaDef) {
    this.tables = {
      types: new Set(schema.types.map((t) => t.table)),
      mappings: new Set(schema.mappings.map((m) => m.table)),
      keyspaces: new Set(schema.keyspaces.map((k) => k.table)),
    };
  }

  /** checkRef, skipping the host-name regex for hosts already seen valid. */
  ref(ref: ShardRef): ShardRef {
    const known = this.knownHosts.has(ref.host);
    checkRef(ref, known);
    if (!known && this.knownHosts.size < MAX_KNOWN_HOSTS) this.knownHosts.add(ref.host);
    return ref;
  }

  /** The ref is valid, the table belongs to the schema and lives on the ref's fleet. */
  check(kind: TableKind, ref: ShardRef, table: string): void {
    this.ref(ref);
    this.table(kind, ref.fleet, table);
  }

  /** Only the table part of check(), for a ref already checked. */
  table(kind: TableKind, fleet: Fleet, table: string): void {
    const want: Fleet = kind === 'keyspaces' ? 'lookups' : 'objects';
    if (fleet !== want) throw new ShardKitError('INVALID_ARGUMENT', `table ${JSON.stringify(String(table).slice(0, 70))} is not on the ${fleet} fleet`);
    if (!this.tables[kind].has(table)) throw new ShardKitError('INVALID_ARGUMENT', `unknown table ${JSON.stringify(String(table).slice(0, 70))}`);
  }
}
