/**
 * Issue #29 (item 4, MariaDB): the freeze's length does not grow with the data. The full
 * comparison of source and target runs before the freeze, while services write, at one consistent
 * point of the running replication; under the freeze only each table's lowest and highest key and the tails written since
 * are checked. What runs where is asserted from the engine's steps (never from timings):
 * - a move of a shard written (creates and patches) throughout: the full comparison ran before
 *   the freeze, no CHECKSUM TABLE and no full table comparison ran under it, and every
 *   acknowledged write (ledger) is on the target with its last value;
 * - a divergence on the target (a row changed behind replication's back) is found before the
 *   freeze: the move aborts with nothing frozen, the range stays on the source, no connection left.
 * Item 5, the admission check: the freeze starts only once what it will wait for (measured on the
 * live hosts: catch-up, the fenced key bounds) fits the move's hold budget; while it does not, the
 * runner waits and reports, and in the end gives up with nothing frozen.
 * Item 3, bounded impact on the source: the pre-copy holds while the source's slave lags past the
 * bound (here: its SQL thread stopped behind 5 writes) and goes on once it caught up; with a row
 * rate set, the rate limiter holds the copy too. Item 2, the parallel copy: it reads from the
 * source's slave while that one is healthy, from the master otherwise (the parallel dumps
 * themselves, several streams from one consistent point, run in every move here and in
 * mariadb-move.test.ts, whose ledger and verify would see a copy that is not consistent).
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
import { MariadbReplicatedMoveEngine } from '../../src/moves/mariadb/replicated-engine.js';
import type { FreezeCost } from '../../src/moves/move-engine.js';
import { copySource, type CopyWait } from '../../src/moves/mariadb/copy-throttle.js';
import type { MoveRecord } from '../../src/topology/shard-map.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe, userProbe } from './mariadb-probe.js';
import { devHostAdmin, type HostAdmin } from '../../src/ops/failover/host-admin.js';
import { moveAdmin } from '../../src/moves/mariadb/move-admin.js';
import { spawn } from 'node:child_process';
import { CLI, ROOT, cliProcess, ensureBuilt } from '../cli/cli-harness.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'MySQL001A';
const TARGET = { master: 'MySQL002A', slave: 'MySQL002B' };

describe('moves on MariaDB: a freeze that does not grow with the data, and its admission check', () => {
  let stop: () => Promise<void>;
  let hosts: Record<string, { host: string; port: number }>;
  let storage: { user: string; password?: string };
  let admin: HostAdmin;
  let backing: MemoryTopologyBacking;
  let kit: ShardKit;
  let objectTables: string[];
  let configPath: string;
  let clusterDir: string;
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
    configPath = started.cluster.configPath;
    clusterDir = started.dir;
    ensureBuilt();
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

  test('a shard written throughout: compared in full before the freeze at a consistent point; under the freeze no CHECKSUM and no full comparison, only key bounds and tails; every acknowledged write is on the target', async () => {
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
    assert.ok(underFreeze.includes('step: verify (fenced): key bounds both sides'), `under the freeze: key bounds\n${underFreeze.join('\n')}`);
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

  /** An engine whose admission measure says "too long" `overBudget` times, then measures for real. */
  const admitting = (overBudget: number) => {
    const costs: FreezeCost[] = [];
    class Busy extends MariadbReplicatedMoveEngine {
      override async freezeCost(move: MoveRecord): Promise<FreezeCost> {
        const cost = costs.length < overBudget ? { ms: 60_000, what: 'catch-up 60000 ms (the test\'s busy host)' } : await super.freezeCost(move);
        costs.push(cost);
        return cost;
      }
    }
    return { costs, engine: new Busy({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin) }) };
  };

  test('admission: a freeze that would overrun its budget never starts; the runner reports the measure, then gives up with a clear message and nothing frozen', async () => {
    for (let i = 0; i < 10; i++) await kit.objects.create('pin', { i }, { shard: 4 });
    const before = await ids('MySQL002A', db(4), 'pins');
    const { costs, engine } = admitting(Infinity);
    const events: MoveEvent[] = [];
    await assert.rejects(
      runMove({ store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 4, last: 4 }, target: { master: SOURCE, slave: 'MySQL001B' }, holdMs: 400 }, lagWaitMs: 1000, onEvent: (e) => events.push(e) }),
      (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /freeze would take about 60000 ms/.test(err.message) && /budget of 400 ms/.test(err.message) && /not freezing/.test(err.message),
    );
    await engine.close();
    assert.ok(costs.length >= 2, `measured again while waiting (${costs.length} measures)`);
    assert.ok(events.some((e) => e.phase === 'copied' && (e.detail?.admission as FreezeCost | undefined)?.ms === 60_000), 'the measure is reported while the runner waits');
    assert.deepEqual(events.filter((e) => e.phase === 'frozen' || e.phase === 'fenced'), []);
    assert.equal((await kit.shardMap()).locate(4).master, 'MySQL002A');
    assert.deepEqual(await ids('MySQL002A', db(4), 'pins'), before);
    assert.deepEqual(await moveConnections(SOURCE), []);
  });

  test('admission waits for a quiet moment: over budget twice, then measured on the live hosts within it, the move switches', async () => {
    const { costs, engine } = admitting(2);
    const result = await runMove({ store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 5, last: 5 }, target: { master: SOURCE, slave: 'MySQL001B' }, holdMs: 30_000 } });
    await engine.close();
    assert.equal(result.outcome, 'switched');
    assert.equal(costs.length, 3);
    assert.ok(Number.isFinite(costs[2]!.ms) && costs[2]!.ms <= 30_000 && /catch-up \d+ ms, key bounds \d+ ms/.test(costs[2]!.what), JSON.stringify(costs[2]));
    assert.equal((await kit.shardMap()).locate(5).master, SOURCE);
  });

  test('the copy holds while the source\'s slave lags past the bound, goes on once it caught up; --max-rate holds it too; every row is on the target', async () => {
    const [src, srcSlave] = ['MySQL002A', 'MySQL002B'];
    for (let i = 0; i < 40; i++) await kit.objects.create('pin', { i }, { shard: 6 });
    const slave = await admin.connect(srcSlave);
    const waits: CopyWait[] = [];
    try {
      await slave.query('STOP SLAVE SQL_THREAD');
      for (let i = 0; i < 5; i++) await kit.objects.create('pin', { late: i }, { shard: 6 });
      let resumed: Promise<unknown> | undefined;
      const engine = createMariadbMoveEngine({
        hosts, ...storage, tables: objectTables, admin: moveAdmin(admin), maxSourceSlaveLag: 2, maxRate: 20,
        onCopyWait: (w) => {
          waits.push(w);
          // The slave catches up only once the copy has been seen waiting for it.
          if (w.why === 'lag') resumed ??= slave.query('START SLAVE SQL_THREAD');
        },
      });
      const result = await runMove({ store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 6, last: 6 }, target: { master: SOURCE, slave: 'MySQL001B' }, holdMs: 30_000 } });
      await resumed;
      await engine.close();
      assert.equal(result.outcome, 'switched');
    } finally {
      await slave.query('START SLAVE SQL_THREAD').catch(() => undefined);
      await slave.end();
    }
    const lagWaits = waits.filter((w): w is Extract<CopyWait, { why: 'lag' }> => w.why === 'lag');
    assert.ok(lagWaits.length > 0 && lagWaits.every((w) => w.bound === 2 && w.lag > 2), JSON.stringify(waits));
    assert.ok(lagWaits.some((w) => w.lag >= 5), `the 5 writes the slave had not applied were seen: ${JSON.stringify(lagWaits)}`);
    assert.ok(waits.some((w) => w.why === 'rate'), `the rate limiter held the copy: ${JSON.stringify(waits)}`);
    assert.equal((await kit.shardMap()).locate(6).master, SOURCE);
    assert.deepEqual(await ids(SOURCE, db(6), 'pins'), await ids(src, `${db(6)}_moved`, 'pins'));
  });

  test('the copy reads from the source\'s slave while it replicates, from the master when its SQL thread is stopped; a 3-stream copy of 3 shards under writes verifies clean', async () => {
    const move = { id: 'probe', range: [7, 7], source: { master: 'MySQL002A', slave: 'MySQL002B' }, target: { master: SOURCE, slave: 'MySQL001B' } } as unknown as MoveRecord;
    const slaveAdmin = moveAdmin(admin);
    assert.equal(await copySource(slaveAdmin, move), 'MySQL002B');
    const slave = await admin.connect('MySQL002B');
    try {
      await slave.query('STOP SLAVE SQL_THREAD');
      assert.equal(await copySource(slaveAdmin, move), 'MySQL002A');
    } finally {
      await slave.query('START SLAVE SQL_THREAD');
      await slave.end();
    }
    assert.equal(await copySource(slaveAdmin, { ...move, source: { master: 'MySQL002A' } } as MoveRecord), 'MySQL002A');

    // Shards 1..3 (one database each) in 3 streams, while a writer creates on them.
    for (let s = 1; s <= 3; s++) for (let i = 0; i < 30; i++) await kit.objects.create('pin', { s, i }, { shard: s });
    const acked: Array<[string, number]> = [];
    let writing = true;
    let writerError: unknown;
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        const shard = 1 + (n % 3);
        try {
          acked.push([String((await kit.objects.create('pin', { n }, { shard })).id), shard]);
        } catch (err) {
          if (!isShardKitError(err)) throw err;
        }
      }
    })().catch((err) => { writerError = err; });
    while (acked.length < 10 && writerError === undefined) await new Promise((r) => setTimeout(r, 20));
    const engine = createMariadbMoveEngine({ hosts, ...storage, tables: objectTables, admin: moveAdmin(admin), copyStreams: 3 });
    const result = await runMove({ store: store(), engine, hosts: Object.keys(hosts), start: { span: { first: 1, last: 3 }, target: TARGET, holdMs: 30_000 } });
    writing = false;
    await writer;
    await engine.close();
    assert.equal(writerError, undefined);
    assert.equal(result.outcome, 'switched');
    assert.deepEqual(result.verify?.mismatches, []);
    for (const [id, shard] of acked) assert.ok((await ids(TARGET.master, db(shard), 'pins')).includes(String(pinterestId.decode(id).localId)), `acknowledged pin ${id} is on the target`);
  });

  test('kill -9 of the CLI mover in the middle of the parallel copy (held there by --max-rate 1): --abort restores, a second kill then --resume switches; 0 acknowledged writes lost (ledger)', async () => {
    const args = ['--config', configPath, '--data', clusterDir];
    // Services of the CLI's topology (the config's store), writing to shard 7 throughout.
    const service = await ShardKit.open({ configPath, dataDir: clusterDir });
    const ledger = new Map<string, unknown>();
    let writing = true;
    let writerError: unknown;
    for (let i = 0; i < 20; i++) ledger.set(String((await service.objects.create('pin', { i }, { shard: 7 })).id), { i });
    const writer = (async () => {
      for (let n = 0; writing; n++) {
        try {
          const o = await service.objects.create('pin', { n }, { shard: 7 });
          ledger.set(String(o.id), o.data);
        } catch (err) {
          if (!isShardKitError(err)) throw err;
        }
      }
    })().catch((err) => { writerError = err; });
    const killMidCopy = async () => {
      const child = spawn(process.execPath, [CLI, 'shards', 'move', '7..7', '--to', SOURCE, '--to-slave', 'MySQL001B', '--hold-ms', '30000', '--max-rate', '1', '--json', ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      // The first progress line with bytes that names the table being dumped (item 6: a line as
      // each table starts): the dumps are streaming, and the rate limit keeps them there.
      let line: { bytesCopied?: number; rowsTotal?: number; tables?: Array<{ table: string; rowsCopied: number; bytesCopied: number }> } | undefined;
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString();
          // Whole lines only (the last may still be arriving).
          const lines = out.split('\n').slice(0, -1).filter((l) => /"event":"progress"/.test(l) && /"bytesCopied":[1-9]/.test(l)).map((l) => JSON.parse(l) as typeof line);
          line = lines.find((l) => l?.tables !== undefined && l.tables.length > 0);
          if (line !== undefined) resolve();
        });
        child.on('exit', (code) => reject(new Error(`the mover exited (${code}) before copying: ${out}`)));
      });
      child.removeAllListeners('exit');
      const exited = new Promise((r) => child.on('exit', r));
      child.kill('SIGKILL');
      await exited;
      assert.ok(!out.includes('"phase":"copied"'), `killed inside the copy: ${out}`);
      // One stream (one shard): its table of shard 7, with the rows and bytes read so far, and the totals beside it.
      assert.equal(line!.tables!.length, 1, JSON.stringify(line));
      assert.match(line!.tables![0]!.table, new RegExp(`^${db(7)}\\.\\w+$`));
      assert.ok(line!.tables![0]!.bytesCopied >= 0 && line!.tables![0]!.rowsCopied >= 0 && typeof line!.rowsTotal === 'number', JSON.stringify(line));
    };
    try {
      await killMidCopy();
      const aborted = await cliProcess(['shards', 'move', '7..7', '--abort', '--json', ...args]);
      assert.equal(aborted.code, 0, aborted.stderr);
      assert.equal((JSON.parse(aborted.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'aborted');
      assert.deepEqual((await ids(SOURCE, db(7), 'pins').catch(() => [])), [], 'no copy left on the target');
      await killMidCopy();
      const resumed = await cliProcess(['shards', 'move', '7..7', '--resume', '--json', ...args]);
      assert.equal(resumed.code, 0, resumed.stderr);
      assert.equal((JSON.parse(resumed.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
      const before = ledger.size;
      while (ledger.size < before + 5 && writerError === undefined) await new Promise((r) => setTimeout(r, 20));
    } finally {
      writing = false;
      await writer;
    }
    assert.equal(writerError, undefined);
    const onTarget = new Set(await ids(SOURCE, db(7), 'pins'));
    for (const [id, data] of ledger) {
      assert.ok(onTarget.has(String(pinterestId.decode(id).localId)), `acknowledged pin ${id} is on the target`);
      assert.deepEqual((await service.objects.get(id)).data, data);
    }
    await service.close();
  });
});
