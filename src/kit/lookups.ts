import { checkLookupKey } from '../storage/backend-args.js';
import type { KitContext } from './kit-context.js';

/**
 * Lookups by arbitrary keys (SPEC §4, the mod shard): email, username, IP ... → object ID, on
 * the mod-shard fleet at md5(key) mod N. Keys are exact byte strings of up to 1024 UTF-8 bytes.
 */
export class Lookups {
  constructor(private readonly ctx: KitContext) {}

  /** Maps `key` to the object `id` (replacing any previous id). */
  async put(keyspace: string, key: string, id: bigint | string): Promise<void> {
    const map = await this.ctx.map();
    const def = this.ctx.keyspace(keyspace);
    checkLookupKey(key);
    const target = this.ctx.locate(map, id, 'id');
    const ref = this.ctx.lookupRef(map, key);
    // Held while the mod shard is frozen, retried once after the fence (KitContext.call): the
    // backend gets the ref call() hands over, which is the new master after a switch.
    await this.ctx.call(ref, 'lookup-put', (r) => this.ctx.backend.putLookup(r, def.table, key, target.id));
  }

  async get(keyspace: string, key: string): Promise<bigint | undefined> {
    const map = await this.ctx.map();
    const def = this.ctx.keyspace(keyspace);
    checkLookupKey(key);
    const ref = this.ctx.lookupRef(map, key);
    return this.ctx.call(ref, 'lookup-get', (r) => this.ctx.backend.getLookup(r, def.table, key));
  }

  /** True when the key existed. */
  async delete(keyspace: string, key: string): Promise<boolean> {
    const map = await this.ctx.map();
    const def = this.ctx.keyspace(keyspace);
    checkLookupKey(key);
    const ref = this.ctx.lookupRef(map, key);
    return this.ctx.call(ref, 'lookup-delete', (r) => this.ctx.backend.deleteLookup(r, def.table, key));
  }

  /** The mod shard of a key (md5(key) mod N). */
  async shardOf(key: string): Promise<number> {
    checkLookupKey(key);
    const map = await this.ctx.map();
    return this.ctx.lookupRef(map, key).shard;
  }
}
