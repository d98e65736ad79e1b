import { ShardKitError } from '../errors.js';
import type { MappingDef } from '../storage/shard-backend.js';
import type { ShardMap } from '../topology/shard-map.js';
import { decodeCursor, encodeCursor } from './cursor-codec.js';
import type { LocatedId, StoreContext } from './store-context.js';
import type { ListOptions, ListOrder, MappingListPage } from './types.js';

export const MAX_PAGE = 1000;
export const DEFAULT_PAGE = 50;

export interface ParsedListOptions {
  limit: number;
  order: ListOrder;
  after: { sequence: number; toId: bigint } | undefined;
}

/** Validates limit, order and cursor (INVALID_ARGUMENT); shared by list and join. */
export function parseListOptions(options: ListOptions = {}): ParsedListOptions {
  const limit = options.limit ?? DEFAULT_PAGE;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ShardKitError('INVALID_ARGUMENT', `limit must be an integer in 1..${MAX_PAGE}`);
  }
  const order = options.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new ShardKitError('INVALID_ARGUMENT', 'order must be "asc" or "desc"');
  const after = options.cursor === undefined || options.cursor === null ? undefined : decodeCursor(options.cursor, order);
  return { limit, order, after };
}

/**
 * Mappings (SPEC §3): one-directional (from, to, sequence) rows on the shard of `from`. Lists are
 * ordered by (sequence, to) and paged with keyset cursors, never OFFSET.
 */
export class Mappings {
  constructor(private readonly ctx: StoreContext) {}

  /** Adds the pair, or moves it to `sequence` when present (default: now in unix ms). */
  async add(name: string, from: bigint | string, to: bigint | string, options: { sequence?: number } = {}): Promise<void> {
    const map = await this.ctx.map();
    const { def, fromLoc, toLoc } = this.resolve(map, name, from, to);
    const sequence = options.sequence ?? Date.now();
    if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence)) {
      throw new ShardKitError('INVALID_ARGUMENT', 'sequence must be a safe integer');
    }
    await this.ctx.call(fromLoc.ref, 'mapping-add', () => this.ctx.backend.addMapping(fromLoc.ref, def.table, fromLoc.id, toLoc.id, sequence));
  }

  async list(name: string, from: bigint | string, options: ListOptions = {}): Promise<MappingListPage> {
    const map = await this.ctx.map();
    const def = this.ctx.mapping(name);
    const fromLoc = this.end(map, def, from, 'from');
    const { limit, order, after } = parseListOptions(options);
    // One row more than asked says whether there is a next page.
    const rows = await this.ctx.call(fromLoc.ref, 'mapping-list', () =>
      this.ctx.backend.listMappings(fromLoc.ref, def.table, fromLoc.id, { limit: limit + 1, order, ...(after ? { after } : {}) }));
    const items = rows.slice(0, limit).map((r) => ({ id: r.toId, sequence: r.sequence }));
    const last = rows.length > limit ? rows[limit - 1]! : undefined;
    return { items, next: last ? encodeCursor(last, order) : null };
  }

  /** True when the pair existed. */
  async remove(name: string, from: bigint | string, to: bigint | string): Promise<boolean> {
    const map = await this.ctx.map();
    const { def, fromLoc, toLoc } = this.resolve(map, name, from, to);
    return this.ctx.call(fromLoc.ref, 'mapping-remove', () => this.ctx.backend.removeMapping(fromLoc.ref, def.table, fromLoc.id, toLoc.id));
  }

  async count(name: string, from: bigint | string): Promise<number> {
    const map = await this.ctx.map();
    const def = this.ctx.mapping(name);
    const fromLoc = this.end(map, def, from, 'from');
    return this.ctx.call(fromLoc.ref, 'mapping-count', () => this.ctx.backend.countMappings(fromLoc.ref, def.table, fromLoc.id));
  }

  private resolve(map: ShardMap, name: string, from: unknown, to: unknown): { def: MappingDef; fromLoc: LocatedId; toLoc: LocatedId } {
    const def = this.ctx.mapping(name);
    return { def, fromLoc: this.end(map, def, from, 'from'), toLoc: this.end(map, def, to, 'to') };
  }

  /** An end of the mapping must be an ID of the type the mapping declares. */
  private end(map: ShardMap, def: MappingDef, input: unknown, which: 'from' | 'to'): LocatedId {
    const loc = this.ctx.locate(map, input, which);
    const want = which === 'from' ? def.from : def.to;
    if (loc.type.name !== want) {
      throw new ShardKitError('INVALID_ARGUMENT', `mapping ${def.name} goes from ${def.from} to ${def.to}; ${which} id ${loc.id} is a ${loc.type.name}`);
    }
    return loc;
  }
}
