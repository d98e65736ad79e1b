/**
 * Issue #29 (item 4, MariaDB): the freeze's length does not grow with the data. The full
 * comparison of source and target runs before the freeze, while services write, at one consistent
 * point of the running replication; under the freeze only row counts and the tails written since
 * are checked. What runs where is asserted from the engine's steps (never from timings):
 * - a move of a shard written (creates and patches) throughout: the full comparison ran before
 *   the freeze, no CHECKSUM TABLE and no full table comparison ran under it, and every
 *   acknowledged write (ledger) is on the target with its last value;
 * - a divergence on the target (a row changed behind replication's back) is found before the
 *   freeze: the move aborts with nothing frozen, the range stays on the source, no connection left.
 */
import { describe, test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { MysqlBackend } from '../../src/storage/mysql/index.js';
import { resolveSchema } from '../../src/config/config.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap, type ShardMapJson } from '../../src/topology/shard-map.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import { createMariadbMoveEngine } from '../../src/moves/mariadb/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe, userProbe } from './mariadb-probe.js';
import { devHostAdmin, type HostAdmin } from '../../src/ops/failover/host-admin.js';
import { moveAdmin } from '../../src/ops/failover/move-admin.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'MySQL001A';
const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };

describe('moves on MariaDB: verify before the freeze, counts and tails under it', () => {
  let stop: () => Promise<void>;
  let hosts: Record<string, { host: string; port: number }>;
  let storage: { user: string; password?: string };
  let admin: HostAdmin;
  let backing: MemoryTopologyBacking;
  let kit: ShardKit;
  let objectTables: string[];
  const stores: MemoryTopologyStore[] = [];
  const store = () => {
    const s = new MemoryTopologyStore({ backing });
    stores.push(s);
    return s;
  };
  const { ids } = userProbe(() => hosts, () => storage);
  const { moveConnections } = adminProbe(() => admin);

  before(async () => {
    const started = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-mariaverify-' });
    stop = started.stop;
    const config = started.cluster.config();
    if (config.storage.backend !== 'mysql') throw new Error('dev cluster config is not mysql');
    storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    const schema = resolveSchema(config);
    objectTables = fleetTables(schema, 'objects');
    admin = devHostAdmin(started.cluster);
    backing = new MemoryTopologyBacking(ShardMap.fromJSON(config.shardMap as ShardMapJson));
    kit = new ShardKit({ backend: new MysqlBackend({ hosts, storage, schema }), schema, topology: store() });
    await kit.ready();
  });
  after(async () => {
    await kit?.close();
    for (const s of stores) await s.close();
    await stop?.();
  });

  /** The engine's steps and the runner's phases, in the order they happened. */
  const recorder = () => {
    const seen: string[] = [];
    const engine = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin), onStep: (step) => seen.push(`step: ${step}`) });
    return { seen, engine, onEvent: (e: MoveEvent) => seen.push(`phase: ${e.phase}`) };
  };

  test('a shard written throughout: compared in full before the freeze at a consistent point; under the freeze no CHECKSUM and no full comparison, only counts and tails; every acknowledged write is on the target', async () => {
    for (let i = 0; i < 300; i++) await kit.objects.create('pin', { i }, { shard: 0 });
    const ledger = new Map<string, unknown>();
    let writing = true;
    let writerError: unknown;
    let n = 0;
    // Creates, and patches of rows the same writer created (so its acknowledgements are in commit order), retried while the move holds them: only acknowledged values go into the ledger.
    const writer = async () => {
      const mine: string[] = [];
      while (writing) {
        try {
          if (mine.length > 5 && n % 3 === 0) {
            const id = mine[n % mine.length]!;
            ledger.set(id, (await kit.objects.patch(id, { patched: n })).data);
          } else {
            const o = await kit.objects.create('pin', { n }, { shard: 0 });
            mine.push(String(o.id));
            ledger.set(String(o.id), o.data);
          }
          n++;
        } catch (err) {
          if (!isShardKitError(err)) throw err;
        }
      }
    };
    const writers = [writer(), writer()].map((w) => w.catch((err) => { writerError ??= err; }));
    while (ledger.size < 20 && writerError === undefined) await new Promise((r) => setTimeout(r, 20));
    const { seen, engine, onEvent } = recorder();
    const wroteDuring = { before: 0, after: 0 };
    const result = await runMove({
      store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 0, last: 0 }, target: TARGET, holdMs: 30_000 }, onEvent,
      afterPhase: (phase) => {
        if (phase === 'copied') wroteDuring.before = n;
        if (phase === 'frozen') wroteDuring.after = n;
      },
    });
    writing = false;
    await Promise.all(writers);
    await engine.close();
    assert.equal(writerError, undefined);
    assert.equal(result.outcome, 'switched');
    assert.deepEqual(result.verify?.mismatches, []);
    assert.ok(wroteDuring.after > wroteDuring.before, `the shard was written between the copy and the freeze (${wroteDuring.before} -> ${wroteDuring.after} writes)`);

    const frozenAt = seen.indexOf('phase: frozen');
    assert.ok(frozenAt > 0, seen.join('\n'));
    const [beforeFreeze, underFreeze] = [seen.slice(0, frozenAt), seen.slice(frozenAt)];
    assert.ok(beforeFreeze.includes('step: pre-verify: chunks compared (both snapshots)'), `the full comparison ran before the freeze:\n${beforeFreeze.join('\n')}`);
    assert.ok(underFreeze.includes('step: verify (fenced): COUNT(*) both sides'), `under the freeze: counts\n${underFreeze.join('\n')}`);
    assert.deepEqual(underFreeze.filter((s) => /CHECKSUM|compared in full|pre-verify/.test(s)), [], `nothing under the freeze reads every row:\n${underFreeze.join('\n')}`);

    // Every acknowledged write, with its last acknowledged value, is on the target.
    const onTarget = new Set(await ids(TARGET.master, db(0), 'pins'));
    for (const [id, data] of ledger) {
      assert.ok(onTarget.has(String(pinterestId.decode(id).localId)), `acknowledged pin ${id} is on the target`);
      assert.deepEqual((await kit.objects.get(id)).data, data);
    }
    assert.deepEqual(await moveConnections(TARGET.master), []);
  });

  test('a divergence on the target is found before the freeze: the move aborts with nothing frozen, the range stays on the source', async () => {
    for (let i = 0; i < 20; i++) await kit.objects.create('pin', { i }, { shard: 3 });
    const before = await ids(SOURCE, db(3), 'pins');
    const { seen, engine, onEvent } = recorder();
    await assert.rejects(
      runMove({
        store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 3, last: 3 }, target: TARGET, holdMs: 30_000 }, onEvent,
        // The copy is changed behind replication's back (binlog off): nothing will ever repair it.
        afterPhase: async (phase) => {
          if (phase !== 'copied') return;
          const c = await admin.connect(TARGET.master);
          try {
            await c.query('SET SESSION sql_log_bin = 0');
            const [r] = await c.query(`UPDATE \`${db(3)}\`.\`pins\` SET data = '{"changed":true}' WHERE local_id = ?`, [before[5]]);
            assert.equal((r as { affectedRows: number }).affectedRows, 1);
          } finally {
            await c.end();
          }
        },
      }),
      (err) => isShardKitError(err) && /verify found 1 mismatching chunk/.test(err.message) && /shard 3 pins/.test(err.message),
    );
    await engine.close();
    assert.ok(seen.includes('step: pre-verify: chunks compared (both snapshots)'), seen.join('\n'));
    assert.deepEqual(seen.filter((s) => s === 'phase: frozen' || s.startsWith('step: fence')), [], `nothing was frozen or fenced:\n${seen.join('\n')}`);
    assert.equal((await kit.shardMap()).locate(3).master, SOURCE);
    assert.deepEqual(await ids(SOURCE, db(3), 'pins'), before);
    assert.deepEqual(await moveConnections(TARGET.master), []);
  });
});
