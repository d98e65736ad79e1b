/**
 * A MariaDB shard move on a fleet with MyRocks wide-column shards (issues #17/#19), on a real dev
 * cluster (2 pairs, object and mod shards 0..3 on MySQL001A, 4..7 on MySQL002A, MyRocks loaded):
 * - shards 0..1 move while writers put cells on wide-column shards 0..7 and keep a ledger of the
 *   acknowledged Put Rows: every acknowledged cell is on the target, the source's fenced copy holds
 *   nothing the target lacks (nothing landed there after the fence), other shards stay where they
 *   were, and a put sent while the shards were frozen is held and lands on the target;
 * - `shards verify` names a cell changed by hand on a slave (sql_log_bin=0), exit 3;
 * - bad input (a target that is the source) is refused, nothing changed.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { myrocksDevExtension } from '../../src/cli/actions/widecolumn-myrocks-dev.js';
import { resolveSchema } from '../../src/config/config.js';
import { runMove } from '../../src/moves/move-runner.js';
import { createMariadbMoveEngine, type MariadbMoveEngine } from '../../src/moves/mariadb/index.js';
import { devHostAdmin } from '../../src/ops/failover/host-admin.js';
import { moveAdmin } from '../../src/moves/mariadb/move-admin.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { MyrocksEngine } from '../../src/widecolumn/myrocks/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { modShard } from '../../src/ids/mod-shard.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { userProbe } from './mariadb-probe.js';
import { cliProcess as cli, ensureBuilt } from '../cli/cli-harness.js';

const SOURCE = 'MySQL001A';
const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };
const DATASET = 'events';
const wc = (s: number) => `wc${String(s).padStart(5, '0')}`;

describe('moves on MariaDB with MyRocks wide-column shards', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  let hosts: Record<string, { host: string; port: number }>;
  let storage: { user: string; password?: string };
  let mover: MariadbMoveEngine;
  let wcEngine: MyrocksEngine;
  let backing: MemoryTopologyBacking;
  let map: ShardMap;
  const stores: MemoryTopologyStore[] = [];
  const store = () => {
    const s = new MemoryTopologyStore({ backing });
    stores.push(s);
    return s;
  };
  const { query, tablesIn } = userProbe(() => hosts, () => storage);
  /** Cells (not head records) on `host` in `database`.events, as `row/col/value`. */
  const cells = async (host: string, database: string): Promise<Set<string>> =>
    new Set((await query<{ k: string }>(host, `SELECT CONCAT(CAST(row_key AS CHAR), '/', CAST(col AS CHAR), '/', CAST(v AS CHAR)) AS k FROM \`${database}\`.\`${DATASET}\` WHERE nts <= 0`)).map((r) => r.k));

  before(async () => {
    fx = await startTestCluster({ pairs: 2, shards: 8, modShards: 8, extensions: [myrocksDevExtension()], prefix: 'shardkit-wcmove-' });
    ensureBuilt();
    const config = fx.cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    const schema = resolveSchema(config);
    mover = createMariadbMoveEngine({ hosts, ...storage, tables: fleetTables(schema, 'objects'), wideColumn: true, modTables: fleetTables(schema, 'lookups'), admin: moveAdmin(devHostAdmin(fx.cluster)) });
    backing = new MemoryTopologyBacking(ShardMap.fromJSON(config.shardMap as ShardMapJson));
    // The engine follows the store as a service does: the watch, and a re-read when it holds or meets a fence.
    const follow = store();
    map = (await follow.read())!;
    follow.watch((m) => {
      if (m.version > map.version) map = m;
    });
    wcEngine = new MyrocksEngine({
      hosts, storage, shardMap: () => map,
      refreshMap: async () => {
        const m = await follow.read();
        if (m !== undefined && m.version > map.version) map = m;
      },
    });
    await wcEngine.putDataset(DATASET, { maxVersions: 1000 });
  });
  after(async () => {
    await wcEngine?.close();
    for (const s of stores) await s.close();
    await fx?.stop();
  });

  test('a move of shards 0..1 carries their wcNNNNN databases: every acknowledged cell on the target, none on the source after the fence, other shards untouched, a put sent under the freeze is held', async () => {
    // Row keys by wide-column shard, so each writer covers every shard.
    const keys: string[][] = Array.from({ length: 8 }, () => []);
    for (let i = 0; keys.some((k) => k.length < 4); i++) {
      const k = `user-${i}`;
      const s = wcEngine.shardOf(k);
      if (keys[s]!.length < 4) keys[s]!.push(k);
    }
    const ledger: Array<{ shard: number; row: string; col: string; value: string }> = [];
    const refused: string[] = [];
    let writing = true;
    let n = 0;
    let writerError: unknown;
    const writer = async (w: number) => {
      while (writing) {
        const i = n++;
        const shard = (w + i) % 8;
        const row = keys[shard]![i % 4]!;
        const value = `w${w}-${i}`;
        try {
          await wcEngine.putRow(DATASET, row, [{ column: `c${i % 3}`, value }]);
          ledger.push({ shard, row, col: `c${i % 3}`, value });
        } catch (err) {
          if (!isShardKitError(err)) throw err;
          refused.push(err.code); // not acknowledged: a client would retry
        }
      }
    };
    const writers = [0, 1, 2, 3].map((w) => writer(w).catch((err) => { writerError ??= err; }));
    const acked = (s: number) => ledger.filter((x) => x.shard === s).length;
    const progress = async (k: number) => {
      const base = [0, 1, 2, 3, 4, 5, 6, 7].map(acked);
      while (writerError === undefined && base.some((b, s) => acked(s) < b + k)) await new Promise((r) => setTimeout(r, 20));
    };
    await progress(5);
    const mapBefore = map;
    const modFrozen = () => map.rangeOf(0)?.frozen !== undefined;
    let held: Promise<{ ok: boolean; err?: unknown; servedBy?: string }> | undefined;
    const heldRow = keys[0]![0]!;
    const result = await runMove({
      store: store(), engine: mover, hosts: Object.keys(hosts), start: { span: { first: 0, last: 1 }, target: TARGET, holdMs: 30_000 },
      afterPhase: async (phase) => {
        // Sent once the services see the freeze: held until the switch, then written on the target.
        if (phase === 'frozen') {
          while (modFrozen() === false) await new Promise((r) => setTimeout(r, 5));
          held = wcEngine.putRow(DATASET, heldRow, [{ column: 'held', value: 'under-the-freeze' }]).then(() => ({ ok: true, servedBy: map.locateModShard(wcEngine.shardOf(heldRow)).master }), (err: unknown) => ({ ok: false, err }));
        }
      },
    });
    await progress(5);
    writing = false;
    await Promise.all(writers);
    assert.equal(writerError, undefined);
    assert.equal(result.outcome, 'switched');
    assert.deepEqual(result.verify?.mismatches, []);
    assert.equal(result.move.detail?.modShards, true, 'the copy found wide-column shards to carry');
    const heldResult = await held!;
    assert.equal(heldResult.ok, true, `the put sent under the freeze was held, not refused: ${String(heldResult.err)}`);
    assert.equal(heldResult.servedBy, TARGET.master, 'the held put was acknowledged only once the map named the target');

    const after = ShardMap.fromJSON((await store().read())!.toJSON());
    for (const s of [0, 1]) assert.equal(after.locateModShard(s).master, TARGET.master, `mod shard ${s} switched with object shard ${s}`);
    for (const s of [2, 3]) assert.equal(after.locateModShard(s).master, SOURCE);
    for (const s of [4, 5, 6, 7]) assert.equal(after.locateModShard(s).master, TARGET.master);

    for (let s = 0; s < 8; s++) {
      const mine = ledger.filter((x) => x.shard === s).map((x) => `${x.row}/${x.col}/${x.value}`);
      if (s <= 1) {
        const onTarget = await cells(TARGET.master, wc(s));
        const fenced = await cells(SOURCE, `${wc(s)}_moved`);
        for (const c of mine) assert.ok(onTarget.has(c), `acknowledged cell ${c} of wide-column shard ${s} is on the target`);
        // The source copy stopped at the fence: the target holds all of it and more.
        for (const c of fenced) assert.ok(onTarget.has(c), `source cell ${c} of shard ${s} was carried`);
        assert.ok(onTarget.size > fenced.size, `shard ${s} took cells on the target after the switch (${onTarget.size} > ${fenced.size})`);
        assert.deepEqual(await tablesIn(SOURCE, wc(s)), [], `${wc(s)} has no live table on the source`);
      } else {
        const home = s <= 3 ? SOURCE : TARGET.master;
        const there = await cells(home, wc(s));
        for (const c of mine) assert.ok(there.has(c), `acknowledged cell ${c} of shard ${s} stayed on ${home}`);
        if (s <= 3) assert.deepEqual(await tablesIn(TARGET.master, wc(s)), [], `${wc(s)} never appears on the target`);
      }
    }
    const targetHeld = await cells(TARGET.master, wc(wcEngine.shardOf(heldRow)));
    assert.ok(targetHeld.has(`${heldRow}/held/under-the-freeze`), 'the held put is on the target');
    // Reads through the engine (the map names the target now) find every acknowledged cell.
    for (const x of ledger.filter((l) => l.shard <= 1).slice(-20)) {
      const r = await wcEngine.getRow(DATASET, x.row, { columns: [x.col], versions: 1000 });
      assert.ok(r.columns[0]!.cells.some((c) => c.value.toString() === x.value), `${x.row}/${x.col}/${x.value} reads back`);
    }
    // The catalogue moved with shard 0: the engine still lists the dataset.
    assert.deepEqual((await wcEngine.listDatasets()).map((d) => d.name), [DATASET]);
    console.log(`moved wide-column shards 0..1: ${ledger.length} acknowledged puts, ${refused.length} refused (${[...new Set(refused)].join(',') || '-'}), verified ${result.verify!.rows} rows, writes held ${result.freezeToSwitchMs} ms`);

    // The storage layer names the fence for wide-column shards as for object shards (one
    // fencedError): a statement on the old master for a moved shard, from an engine that still
    // routes by the map before the move and has no store to re-read, is SHARD_FENCED (503), not "run init".
    const stale = new MyrocksEngine({ hosts, storage, shardMap: () => mapBefore });
    try {
      const movedRow = keys[1]![0]!;
      await assert.rejects(stale.getRow(DATASET, movedRow, { columns: ['c0'] }),
        (err) => isShardKitError(err, 'SHARD_FENCED') && err.status === 503 && /wide-column shard \d+ .*fenced by a shard move \(its tables are in wc0000\d_moved\)/.test(err.message) && err.details?.missingTable === true);
    } finally {
      await stale.close();
    }

    // drop-moved removes the fenced wcNNNNN_moved (and dbNNNNN_moved) on the source only.
    assert.equal(await mover.dropMoved(result.move), 4);
    assert.deepEqual(await tablesIn(SOURCE, `${wc(0)}_moved`), []);
    assert.ok((await cells(TARGET.master, wc(0))).size > 0);
  });

  test('shards verify names a wide-column cell changed by hand on a slave (sql_log_bin=0), exit 3; bad input changes nothing', async () => {
    const args = ['--config', fx.cluster.configPath, '--data', fx.dir];
    const row = Array.from({ length: 200 }, (_, i) => `verify-${i}`).find((k) => wcEngine.shardOf(k) === 2)!;
    await wcEngine.putRow(DATASET, row, [{ column: 'c', value: 'original' }]);
    const clean = await cli(['shards', 'verify', '2..2', '--json', ...args]);
    assert.equal(clean.code, 0, clean.stdout + clean.stderr);
    const slave = fx.cluster.instance('MySQL001B');
    const drift = (v: string) => slave.admin('SET sql_log_bin = 0', { sql: `UPDATE ${wc(2)}.${DATASET} SET v = ? WHERE row_key = ? AND nts <= 0`, values: [v, row] });
    await drift('changed by hand');
    try {
      const dirty = await cli(['shards', 'verify', '2..2', '--json', ...args]);
      assert.equal(dirty.code, 3, dirty.stdout + dirty.stderr);
      const m = (JSON.parse(dirty.stdout) as { mismatches: Array<{ shard: number; table: string }> }).mismatches;
      assert.deepEqual(m.map((x) => [x.shard, x.table]), [[2, `${wc(2)}.${DATASET}`]]);
    } finally {
      await drift('original');
    }
    const show = async () => (await cli(['topology', 'show', '--json', ...args])).stdout;
    const before = await show();
    const bad = await cli(['shards', 'move', '2..3', '--to', SOURCE, '--json', ...args]);
    assert.notEqual(bad.code, 0, bad.stdout);
    assert.equal(await show(), before, 'a refused move changes nothing');
    assert.deepEqual(await tablesIn(SOURCE, `${wc(2)}_moved`), [], 'nothing fenced');
  });

  test('batch put, batch get, versions>1 and time-range reads from a service with a stale map meet the fence of a move of shard 2, re-read the map and go once to the target', async () => {
    const rowsOn = (shard: number, n: number): string[] => {
      const out: string[] = [];
      for (let i = 0; out.length < n; i++) if (wcEngine.shardOf(`fence-${i}`) === shard) out.push(`fence-${i}`);
      return out;
    };
    // Shard 2 moves; shard 3 stays on the source: one batch statement on the source reads both.
    const moving = rowsOn(2, 3);
    const staying = rowsOn(3, 2);
    const T0 = 1_700_000_000_000;
    for (const row of [...moving, ...staying]) {
      await wcEngine.putRow(DATASET, row, [1, 2, 3, 4].flatMap((k) => [{ column: 'c', value: `v${k}`, timestamp: T0 + k }, { column: 'e', value: `e${k}`, timestamp: T0 + k }]));
    }
    // A service whose watch missed the freeze: its map names the source until it re-reads the
    // store, which it does only when it meets the fence.
    let staleMap = ShardMap.fromJSON((await store().read())!.toJSON());
    assert.equal(staleMap.locateModShard(2).master, SOURCE);
    let refreshes = 0;
    const reader = store();
    const stale = new MyrocksEngine({
      hosts, storage, shardMap: () => staleMap,
      refreshMap: async () => {
        refreshes++;
        const m = await reader.read();
        if (m !== undefined && m.version > staleMap.version) staleMap = m;
      },
    });
    try {
      await stale.getRow(DATASET, moving[0]!); // the catalogue is loaded before the fence
      type Settled<T> = { ok: true; value: T } | { ok: false; err: unknown };
      const settle = <T>(p: Promise<T>): Promise<Settled<T>> => p.then((value) => ({ ok: true as const, value }), (err: unknown) => ({ ok: false as const, err }));
      let ops: {
        put: Promise<Settled<unknown>>;
        get: Promise<Settled<import('../../src/widecolumn/types.js').RowResult[]>>;
        deep: Promise<Settled<import('../../src/widecolumn/types.js').RowResult>>;
        range: Promise<Settled<import('../../src/widecolumn/types.js').RowResult>>;
      } | undefined;
      const result = await runMove({
        store: store(), engine: mover, hosts: Object.keys(hosts), start: { span: { first: 2, last: 2 }, target: TARGET, holdMs: 30_000 },
        afterPhase: (phase) => {
          // Sent after the fence, not awaited here (they wait for the switch the mover makes next).
          if (phase !== 'fenced') return;
          ops = {
            put: settle(stale.batchPutRows(DATASET, [...moving, ...staying].map((row) => ({ row, items: [{ column: 'b', value: 'across-the-fence' }] })))),
            get: settle(stale.batchGetRows(DATASET, [...moving, ...staying].map((row) => ({ row, columns: ['c'], versions: 2 })))),
            deep: settle(stale.getRow(DATASET, moving[1]!, { versions: 3 })),
            range: settle(stale.getRow(DATASET, moving[2]!, { columns: ['c', 'e'], versions: 4, start: T0 + 2, end: T0 + 4 })),
          };
        },
      });
      assert.equal(result.outcome, 'switched');
      const put = await ops!.put;
      const get = await ops!.get;
      const deep = await ops!.deep;
      const range = await ops!.range;
      const failed = Object.entries({ put, get, deep, range }).filter(([, r]) => !r.ok).map(([name, r]) => `${name}: ${String((r as { err: unknown }).err)}`);
      assert.deepEqual(failed, [], 'every operation across the fence was answered');
      assert.ok(refreshes >= 1, 'the stale engine met the fence and re-read the map');
      assert.equal(staleMap.locateModShard(2).master, TARGET.master);
      assert.equal(staleMap.locateModShard(3).master, SOURCE);
      const values = (r: import('../../src/widecolumn/types.js').RowResult, col: string) => r.columns.find((c) => c.column === col)?.cells.map((c) => c.value.toString()) ?? [];
      if (!get.ok || !deep.ok || !range.ok) throw new Error('unreachable');
      assert.deepEqual(get.value.map((r) => [r.row, values(r, 'c')]), [...moving, ...staying].map((row) => [row, ['v4', 'v3']]));
      assert.deepEqual(values(deep.value, 'c'), ['v4', 'v3', 'v2']);
      assert.deepEqual(values(deep.value, 'e'), ['e4', 'e3', 'e2']);
      assert.deepEqual([values(range.value, 'c'), values(range.value, 'e')], [['v3', 'v2'], ['e3', 'e2']]);
      // The batch put landed on the target for shard 2 (nothing on the fenced source copy), and on
      // the source for shard 3.
      const onTarget = await cells(TARGET.master, wc(2));
      const fencedCopy = await cells(SOURCE, `${wc(2)}_moved`);
      const stayed = await cells(SOURCE, wc(3));
      for (const row of moving) {
        assert.ok(onTarget.has(`${row}/b/across-the-fence`), `${row} put across the fence is on the target`);
        assert.ok(!fencedCopy.has(`${row}/b/across-the-fence`), `${row} put is not on the fenced source`);
      }
      for (const row of staying) assert.ok(stayed.has(`${row}/b/across-the-fence`), `${row} (shard 3) stayed on the source`);
      console.log(`across the fence of shard 2: batch put, batch get, versions=3 and time-range reads answered from the target after ${refreshes} map re-reads`);
    } finally {
      await stale.close();
    }
  });

  test('lookups of a service whose map missed the freeze: put, get and delete on mod shard 3 sent after the fence of its move are answered from the target, nothing lands on the fenced source', async () => {
    const config = fx.cluster.config();
    const schema = resolveSchema(config);
    const mem = store();
    assert.equal((await mem.read())!.locateModShard(3).master, SOURCE);
    // A paused watch: the service sees the map only when it re-reads the store (on meeting the fence).
    const paused: TopologyStore = { read: () => mem.read(), write: (m, v) => mem.write(m, v), watch: () => () => {}, close: async () => undefined };
    const backend = new MysqlBackend({ hosts, storage, schema });
    const kit = new ShardKit({ backend, schema, topology: paused });
    const modShards = (await mem.read())!.modShardCount;
    const keyOn = (tag: string) => {
      for (let i = 0; ; i++) if (modShard(`${tag}-${i}`, modShards) === 3) return `${tag}-${i}`;
    };
    const [kept, gone, fresh] = [keyOn('kept'), keyOn('gone'), keyOn('fresh')];
    const onHost = (host: string, key: string) => backend.getLookup({ host, shard: 3, fleet: 'lookups' }, 'lookup_email', key);
    try {
      await kit.ready();
      const user = await kit.objects.create('user', {}, { shard: 4 });
      await kit.lookups.put('email', kept, user.id);
      await kit.lookups.put('email', gone, user.id);
      type Settled<T> = { ok: true; value: T } | { ok: false; err: unknown };
      const settle = <T>(p: Promise<T>): Promise<Settled<T>> => p.then((value) => ({ ok: true as const, value }), (err: unknown) => ({ ok: false as const, err }));
      let ops: { put: Promise<Settled<void>>; get: Promise<Settled<bigint | undefined>>; del: Promise<Settled<boolean>> } | undefined;
      const result = await runMove({
        store: store(), engine: mover, hosts: Object.keys(hosts), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 },
        afterPhase: (phase) => {
          // Sent after the fence, not awaited here: the service still routes mod shard 3 to the source.
          if (phase !== 'fenced') return;
          ops = { put: settle(kit.lookups.put('email', fresh, user.id)), get: settle(kit.lookups.get('email', kept)), del: settle(kit.lookups.delete('email', gone)) };
        },
      });
      assert.equal(result.outcome, 'switched');
      const [put, get, del] = [await ops!.put, await ops!.get, await ops!.del];
      const failed = Object.entries({ put, get, del }).filter(([, r]) => !r.ok).map(([name, r]) => `${name}: ${String((r as { err: unknown }).err)}`);
      assert.deepEqual(failed, [], 'every lookup across the fence was answered');
      assert.equal(get.ok && get.value, user.id);
      assert.equal(del.ok && del.value, true);
      assert.equal((await kit.shardMap()).locateModShard(3).master, TARGET.master, 'the service re-read the map');
      assert.equal(await onHost(TARGET.master, fresh), user.id, 'the put is on the target');
      assert.equal(await onHost(TARGET.master, gone), undefined, 'the delete happened on the target');
      assert.equal(await onHost(TARGET.master, kept), user.id);
      // The source's copy was fenced aside with the move: the put is not there, the deleted key still is.
      const fencedCopy = (await query<{ k: string }>(SOURCE, 'SELECT CAST(`key` AS CHAR) AS k FROM `db00003_moved`.`lookup_email`')).map((r) => r.k);
      assert.ok(!fencedCopy.includes(fresh), 'nothing written on the fenced source');
      assert.ok(fencedCopy.includes(gone) && fencedCopy.includes(kept));
    } finally {
      await kit.close();
      await backend.close();
    }
  });
});
