/**
 * Store (embedded): ShardKit on SQLite against raw better-sqlite3 on the same files.
 *   1. objects.get(id) through ShardKit (parse + validate the ID, route by the shard map, read,
 *      JSON.parse, soft-delete check) vs a raw prepared statement + JSON.parse. Target >= 0.5x.
 *      The same gets through a second kit on the same files with a memory cache (every object
 *      hot after one pass), for reference: what a cache hit costs next to a SQLite read.
 *   2. mappings.list: a 50-item page at depth 10 000 vs at depth 0 (keyset cursor). Target >= 0.8.
 *      A raw OFFSET query at the same depth is shown for contrast.
 * Same process, same files, same IDs; rounds alternate, ratios are medians of round pairs.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { defaultConfig, parseConfig, resolveSchema } from '../src/config/config.js';
import { pinterestId } from '../src/ids/pinterest-id.js';
import { SqliteBackend } from '../src/storage/sqlite/sqlite-backend.js';
import { encodeCursor } from '../src/kit/cursor-codec.js';
import { MemoryCache } from '../src/cache/index.js';
import { ShardKit } from '../src/kit/shard-kit.js';
import { ShardMap } from '../src/topology/shard-map.js';
import { shardDatabaseName } from '../src/storage/shard-names.js';

const SHARDS = 64;
const OBJECTS = 20_000;
const GETS = 30_000;
const LIST_DEPTH = 10_000;
const LIST_ITER = 2_000;

function rate(ops: number, ms: number): number {
  return (ops / ms) * 1000;
}

async function best(rounds: number, fn: () => Promise<number> | number): Promise<number> {
  let top = 0;
  for (let i = 0; i < rounds; i++) top = Math.max(top, await fn());
  return top;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)]!;
}

const fmt = (n: number) => `${Math.round(n).toLocaleString('en-US')} ops/s`;

const root = mkdtempSync(join(tmpdir(), 'shardkit-bench-store-'));
const config = parseConfig(defaultConfig({ shards: SHARDS, pairs: 8 }));
const schema = resolveSchema(config);
const map = ShardMap.fromJSON(config.shardMap);
const backend = new SqliteBackend({ root, schema, maxOpenShards: 256 });
const kit = new ShardKit({ backend, schema, shardMap: map });
const cachedKit = new ShardKit({ backend, schema, shardMap: map, cache: new MemoryCache({ maxEntries: 100_000 }) });
try {
  // --- setup: OBJECTS pins spread over every shard -------------------------------------------
  const ids: bigint[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    const o = await kit.objects.create('pin', { details: `pin number ${i}`, link: `https://example.com/p/${i}`, board_id: '241294561224164665', user_id: '241294629943640797' }, { shard: i % SHARDS });
    ids.push(o.id);
  }
  let seed = 12345;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const order = Array.from({ length: GETS }, () => ids[Math.floor(rnd() * ids.length)]!);

  // Raw: one handle and one prepared statement per shard file, the ID already split.
  const raw = new Map<number, Database.Statement>();
  for (let s = 0; s < SHARDS; s++) {
    const host = map.locate(s).master;
    const db = new Database(join(root, host, `${shardDatabaseName(s)}.sqlite`));
    raw.set(s, db.prepare('SELECT local_id, data, ts FROM pins WHERE local_id = ?'));
  }
  const parts = order.map((id) => pinterestId.decode(id));

  const kitOnce = async (k = kit) => {
    let sink = 0;
    const t = performance.now();
    for (const id of order) sink += (await k.objects.get(id)).data.details === undefined ? 0 : 1;
    const ms = performance.now() - t;
    if (sink !== GETS) throw new Error('missing objects');
    return rate(GETS, ms);
  };
  const rawOnce = () => {
    let sink = 0;
    const t = performance.now();
    for (const p of parts) {
      const row = raw.get(p.shard)!.get(p.localId) as { data: string };
      sink += (JSON.parse(row.data) as { details?: string }).details === undefined ? 0 : 1;
    }
    const ms = performance.now() - t;
    if (sink !== GETS) throw new Error('missing rows');
    return rate(GETS, ms);
  };
  // Rounds alternate so that load from other processes on the machine hits both sides alike;
  // the ratio is the median of the per-round ratios, the rates the best rounds.
  let kitGet = 0;
  let rawGet = 0;
  const getRatios: number[] = [];
  for (let round = 0; round < 7; round++) {
    const k = await kitOnce();
    const r = rawOnce();
    kitGet = Math.max(kitGet, k);
    rawGet = Math.max(rawGet, r);
    getRatios.push(k / r);
  }

  await kitOnce(cachedKit); // fills the cache
  let cachedGet = 0;
  const cachedRatios: number[] = [];
  for (let round = 0; round < 5; round++) {
    const c = await kitOnce(cachedKit);
    const r = rawOnce();
    cachedGet = Math.max(cachedGet, c);
    cachedRatios.push(c / r);
  }
  const stats = cachedKit.cacheStats()!;
  const distinct = new Set(order).size;
  if (stats.misses !== distinct || stats.hits !== GETS * 6 - distinct) throw new Error(`cache: ${JSON.stringify(stats)}`);

  // getMany of 50 IDs over many shards, for reference (no raw peer: the raw equivalent is 50 gets).
  const batches = Array.from({ length: 2000 }, (_, b) => order.slice(b * 50, b * 50 + 50));
  const kitMany = await best(3, async () => {
    const t = performance.now();
    for (const batch of batches) await kit.objects.getMany(batch);
    return rate(batches.length * 50, performance.now() - t);
  });

  // --- mappings.list at depth 0 vs depth 10 000 ----------------------------------------------
  const board = await kit.objects.create('board', { name: 'deep' }, { shard: 1 });
  const total = LIST_DEPTH + 200;
  // Pin i is mapped with sequence i, so the item at depth d has sequence d.
  for (let i = 0; i < total; i++) await kit.mappings.add('board_has_pins', board.id, ids[i]!, { sequence: i });
  const deepCursor = encodeCursor({ sequence: LIST_DEPTH - 1, toId: ids[LIST_DEPTH - 1]! }, 'asc', { mapping: 'board_has_pins', from: board.id });
  const check = await kit.mappings.list('board_has_pins', board.id, { limit: 50, order: 'asc', cursor: deepCursor });
  if (check.items[0]!.sequence !== LIST_DEPTH || check.items.length !== 50) throw new Error(`deep page starts at ${check.items[0]?.sequence}`);
  const listOnce = async (cursor: string | null) => {
    const t = performance.now();
    for (let i = 0; i < LIST_ITER; i++) await kit.mappings.list('board_has_pins', board.id, { limit: 50, order: 'asc', cursor });
    return rate(LIST_ITER, performance.now() - t);
  };
  // Rounds alternate between the two depths so that load on the machine hits both alike.
  let list0 = 0;
  let listDeep = 0;
  const listRatios: number[] = [];
  for (let round = 0; round < 7; round++) {
    const a = await listOnce(null);
    const b = await listOnce(deepCursor);
    list0 = Math.max(list0, a);
    listDeep = Math.max(listDeep, b);
    listRatios.push(b / a);
  }
  const db1 = new Database(join(root, map.locate(1).master, `${shardDatabaseName(1)}.sqlite`));
  db1.defaultSafeIntegers(true);
  const offsetStmt = db1.prepare('SELECT to_id, sequence FROM board_has_pins WHERE from_id = ? ORDER BY sequence, to_id LIMIT 50 OFFSET ?');
  const offsetAt = (offset: number) => best(3, () => {
    const t = performance.now();
    for (let i = 0; i < LIST_ITER; i++) offsetStmt.all(board.id, offset);
    return rate(LIST_ITER, performance.now() - t);
  });
  const off0 = await offsetAt(0);
  const offDeep = await offsetAt(LIST_DEPTH);

  console.log(`objects.get (${OBJECTS} pins on ${SHARDS} shard files, ${GETS} random gets, 7 alternating rounds)`);
  console.log(`  ShardKit objects.get           ${fmt(kitGet)}`);
  console.log(`  raw better-sqlite3 stmt.get    ${fmt(rawGet)}`);
  console.log(`  ratio ShardKit/raw             ${median(getRatios).toFixed(2)}x   (median of 7 round pairs; target >= 0.5x)`);
  console.log(`  ShardKit objects.getMany(50)   ${fmt(kitMany)} objects`);
  console.log(`  ShardKit + memory cache, hot   ${fmt(cachedGet)}   (${median(cachedRatios).toFixed(2)}x raw; median of 5 round pairs)`);
  console.log(`mappings.list, 50-item page, list of ${total} (7 alternating rounds, ${LIST_ITER} pages each)`);
  console.log(`  depth 0                        ${fmt(list0)}`);
  console.log(`  depth ${LIST_DEPTH} (keyset cursor)   ${fmt(listDeep)}`);
  console.log(`  ratio depth ${LIST_DEPTH}/depth 0      ${median(listRatios).toFixed(2)}   (median of 7 round pairs; target >= 0.8)`);
  console.log(`  for contrast, raw OFFSET paging: depth 0 ${fmt(off0)}, depth ${LIST_DEPTH} ${fmt(offDeep)}, ratio ${(offDeep / off0).toFixed(3)}`);
  db1.close();
  for (const s of raw.values()) s.database.close();
} finally {
  await cachedKit.close();
  await kit.close();
  await backend.close();
  rmSync(root, { recursive: true, force: true });
}
