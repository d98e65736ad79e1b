import { ShardKitError } from '../errors.js';
import type { MappingDef } from '../storage/shard-backend.js';
import type { ShardMap } from '../topology/shard-map.js';
import { decodeCursor, encodeCursor, type CursorList } from './cursor-codec.js';
import type { KitCache } from './kit-cache.js';
import type { LocatedId, KitContext } from './kit-context.js';
import type { ListOptions, ListOrder, MappingListPage } from './types.js';
import { checkMethodOptions } from './kit-options.js';

const ADD_OPTIONS: ReadonlySet<string> = new Set(['sequence']);
const LIST_OPTIONS: ReadonlySet<string> = new Set(['limit', 'order', 'cursor']);

export const MAX_PAGE = 1000;
export const DEFAULT_PAGE = 50;

export interface ParsedListOptions {
  limit: number;
  order: ListOrder;
  after: { sequence: number; toId: bigint } | undefined;
}

/** Validates limit, order and cursor (INVALID_ARGUMENT; the cursor must come from `list`). */
export function parseListOptions(options: ListOptions, list: CursorList): ParsedListOptions {
  const limit = options.limit ?? DEFAULT_PAGE;
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw new ShardKitError('INVALID_ARGUMENT', `limit must be an integer in 1..${MAX_PAGE}`);
  }
  const order = options.order ?? 'desc';
  if (order !== 'asc' && order !== 'desc') throw new ShardKitError('INVALID_ARGUMENT', 'order must be "asc" or "desc"');
  const after = options.cursor === undefined || options.cursor === null ? undefined : decodeCursor(options.cursor, order, list);
  return { limit, order, after };
}

/**
 * Mappings (SPEC §3): one-directional (from, to, sequence) rows on the shard of `from`. Lists are
 * ordered by (sequence, to) and paged with keyset cursors, never OFFSET.
 */
export class Mappings {
  constructor(private readonly ctx: KitContext) {}

  /** Adds the pair, or moves it to `sequence` when present (default: now in unix ms). */
  async add(name: string, from: bigint | string, to: bigint | string, options: { sequence?: number } = {}): Promise<void> {
    checkMethodOptions(options, ADD_OPTIONS, 'mappings.add');
    const map = await this.ctx.map();
    const { def, fromLoc, toLoc } = this.resolve(map, name, from, to);
    const sequence = options.sequence ?? Date.now();
    if (typeof sequence !== 'number' || !Number.isSafeInteger(sequence)) {
      throw new ShardKitError('INVALID_ARGUMENT', 'sequence must be a safe integer');
    }
    try {
      await this.ctx.call(fromLoc.ref, 'mapping-add', (r) => this.ctx.backend.addMapping(r, def.table, fromLoc.id, toLoc.id, sequence));
    } finally {
      // Also after a failure: it may have committed (a timeout after COMMIT).
      await this.ctx.cache?.bumpGeneration(def.name, fromLoc.id);
    }
  }

  async list(name: string, from: bigint | string, options: ListOptions = {}): Promise<MappingListPage> {
    checkMethodOptions(options, LIST_OPTIONS, 'mappings.list');
    const map = this.ctx.loaded ?? (await this.ctx.map());
    const def = this.ctx.mapping(name);
    const fromLoc = this.end(map, def, from, 'from');
    const list: CursorList = { mapping: def.name, from: fromLoc.id };
    const { limit, order, after } = parseListOptions(options, list);
    const cache = this.ctx.cache;
    if (cache === undefined) return this.readPage(def, fromLoc, list, limit, order, after);
    // The page key is built from the parsed cursor, never from the client's text.
    const page = `${order}:${limit}:${after ? `${after.sequence}.${after.toId}` : '-'}`;
    return readThrough(cache, def.name, fromLoc.id, page, () => this.readPage(def, fromLoc, list, limit, order, after), encodePage, decodePage);
  }

  /**
   * One page from the backend. A method rather than a closure made in list(): without a cache
   * this is the whole per-call path, and the closure (named by the TypeScript runner) cost more
   * than the rest of the kit's own work.
   */
  private async readPage(def: MappingDef, fromLoc: LocatedId, list: CursorList, limit: number, order: ListOrder, after: ParsedListOptions['after']): Promise<MappingListPage> {
    // One row more than asked says whether there is a next page.
    const rows = await this.ctx.call(fromLoc.ref, 'mapping-list', (r) =>
      this.ctx.backend.listMappings(r, def.table, fromLoc.id, after ? { limit: limit + 1, order, after } : { limit: limit + 1, order }));
    const n = Math.min(rows.length, limit);
    const items = new Array<{ id: bigint; sequence: number }>(n);
    for (let i = 0; i < n; i++) items[i] = { id: rows[i]!.toId, sequence: rows[i]!.sequence };
    const last = rows.length > limit ? rows[limit - 1]! : undefined;
    return { items, next: last ? encodeCursor(last, order, list) : null };
  }

  /** True when the pair existed. */
  async remove(name: string, from: bigint | string, to: bigint | string): Promise<boolean> {
    const map = await this.ctx.map();
    const { def, fromLoc, toLoc } = this.resolve(map, name, from, to);
    try {
      return await this.ctx.call(fromLoc.ref, 'mapping-remove', (r) => this.ctx.backend.removeMapping(r, def.table, fromLoc.id, toLoc.id));
    } finally {
      await this.ctx.cache?.bumpGeneration(def.name, fromLoc.id);
    }
  }

  async count(name: string, from: bigint | string): Promise<number> {
    const map = await this.ctx.map();
    const def = this.ctx.mapping(name);
    const fromLoc = this.end(map, def, from, 'from');
    const read = () => this.ctx.call(fromLoc.ref, 'mapping-count', (r) => this.ctx.backend.countMappings(r, def.table, fromLoc.id));
    const cache = this.ctx.cache;
    if (cache === undefined) return read();
    return readThrough(cache, def.name, fromLoc.id, 'count', read, String, decodeCount);
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

/*
 * Mapping lists are cached per (mapping, from) under a generation: a key g:<mapping>:<from>
 * holds a random token, and every page and count of that list is stored under a key that
 * embeds it. add/remove replace the token, which orphans every page at once (memcached cannot
 * list or delete by prefix; the orphans expire with their TTL). It tolerates races simply: a
 * reader that read the list before a write can only fill under the old token, which nobody
 * reads any more. The one window left is a reader that found no token at all and creates one
 * after another process's write set its own: inside one process the fill guard (on the
 * generation key) closes it; across processes the TTL bounds it.
 */
async function readThrough<T>(
  cache: KitCache,
  mapping: string,
  from: bigint,
  what: string,
  read: () => Promise<T>,
  encode: (value: T) => string,
  decode: (text: string) => T | undefined,
): Promise<T> {
  const genKey = cache.generationKey(mapping, from);
  // The token is taken before the generation is read: a write after this point skips our fill.
  const token = cache.begin();
  let filled = false;
  try {
    const [current] = await cache.read([genKey], false);
    if (current !== undefined) {
      const [text] = await cache.read([cache.listKey(mapping, from, current, what)], false);
      const hit = text === undefined ? undefined : decode(text);
      if (hit !== undefined) {
        cache.count(true);
        return hit;
      }
    }
    cache.count(false);
    const value = await read();
    const generation = current ?? cache.newGeneration();
    const entries: [string, string, string][] = [[cache.listKey(mapping, from, generation, what), encode(value), genKey]];
    if (current === undefined) entries.push([genKey, generation, genKey]);
    filled = true;
    cache.fill(token, entries);
    return value;
  } finally {
    if (!filled) cache.release();
  }
}

/** A page as `[next, id, sequence, id, sequence, ...]` with IDs as decimal strings. */
function encodePage(page: MappingListPage): string {
  const flat: (string | number | null)[] = [page.next];
  for (const item of page.items) flat.push(String(item.id), item.sequence);
  return JSON.stringify(flat);
}

function decodePage(text: string): MappingListPage | undefined {
  let flat: unknown;
  try {
    flat = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!Array.isArray(flat) || flat.length % 2 !== 1 || (flat[0] !== null && typeof flat[0] !== 'string')) return undefined;
  const items: MappingListPage['items'] = [];
  for (let i = 1; i < flat.length; i += 2) {
    const id = flat[i];
    const sequence = flat[i + 1];
    if (typeof id !== 'string' || !/^[0-9]{1,20}$/.test(id) || typeof sequence !== 'number') return undefined;
    items.push({ id: BigInt(id), sequence });
  }
  return { items, next: flat[0] as string | null };
}

function decodeCount(text: string): number | undefined {
  const n = Number(text);
  return /^[0-9]{1,16}$/.test(text) && Number.isSafeInteger(n) ? n : undefined;
}
