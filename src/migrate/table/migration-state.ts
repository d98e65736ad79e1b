import { ShardKitError, isShardKitError } from '../../errors.js';
import type { ShardKit } from '../../kit/shard-kit.js';
import type { JsonObject } from '../../kit/types.js';

/**
 * The lookup key, in the migration's keyspace, of the object that holds its state. Old ids are
 * keys of the same keyspace; a source row whose id is this text is skipped.
 */
export const STATE_KEY = '#shardkit-migration-state';

/** What a table migration remembers between runs (the data of its state object). */
export interface TableMigrationState extends JsonObject {
  kind: 'shardkit-table-migration';
  source: string;
  query: string;
  type: string;
  idColumn: string;
  changedColumn: string;
  /** The changed value of the last row of the last completed page (server text); null before the first. */
  highWater: string | null;
  runs: number;
  /** Set by a --final run that found the source read-only and copied its last delta. */
  finalAt: string | null;
  lastRun: JsonObject | null;
}

/** The state object of a migration: read at the start, checkpointed after every page. */
export class MigrationStateStore {
  private constructor(
    private readonly kit: ShardKit,
    private readonly keyspace: string,
    readonly stateType: string,
    private id: bigint | undefined,
    private etag: string | undefined,
    private current: TableMigrationState | undefined,
  ) {}

  /** Reads the state of the migration recorded in `keyspace` (undefined state: never run). */
  static async open(kit: ShardKit, keyspace: string, stateType: string): Promise<MigrationStateStore> {
    const id = await kit.lookups.get(keyspace, STATE_KEY);
    if (id === undefined) return new MigrationStateStore(kit, keyspace, stateType, undefined, undefined, undefined);
    let obj;
    try {
      obj = await kit.objects.get(id);
    } catch (err) {
      if (isShardKitError(err, 'NOT_FOUND')) throw new ShardKitError('ALREADY_EXISTS', `keyspace ${keyspace} names a migration state object ${id} that is gone; refusing to guess what the keyspace holds`);
      throw err;
    }
    if (obj.type !== stateType || (obj.data as { kind?: unknown }).kind !== 'shardkit-table-migration') {
      throw new ShardKitError('ALREADY_EXISTS', `keyspace ${keyspace}: key ${STATE_KEY} names object ${id} (type ${obj.type}), which is not a migration state`);
    }
    return new MigrationStateStore(kit, keyspace, stateType, id, obj.etag, obj.data as TableMigrationState);
  }

  get state(): TableMigrationState | undefined {
    return this.current;
  }

  get objectId(): bigint | undefined {
    return this.id;
  }

  /**
   * Writes the new state. The update is conditional on the etag read last, so two runs of the
   * same migration at once cannot both advance it: the second gets VERSION_CONFLICT.
   */
  async save(next: TableMigrationState): Promise<void> {
    if (this.id === undefined) {
      const obj = await this.kit.objects.create(this.stateType, next);
      await this.kit.lookups.put(this.keyspace, STATE_KEY, obj.id);
      this.id = obj.id;
      this.etag = obj.etag;
    } else {
      try {
        const obj = await this.kit.objects.update(this.id, () => next, { ifMatch: this.etag! });
        this.etag = obj.etag;
      } catch (err) {
        if (isShardKitError(err, 'PRECONDITION_FAILED')) {
          throw new ShardKitError('VERSION_CONFLICT', `another run of this migration changed its state (object ${this.id}) meanwhile: run one at a time`);
        }
        throw err;
      }
    }
    this.current = next;
  }
}
