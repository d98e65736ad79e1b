/**
 * Shard moves on PostgreSQL 15, on a real dev cluster: `dev up --engine postgres` (one pair,
 * object shards 0..3 and mod shards 0..3 on PG001A), then `dev add-pair` (PG002A/PG002B), and the
 * mover is the CLI (`shards move|verify|drop-moved`), as an operator runs it. Two ShardKit
 * instances follow the file topology store, as two services would.
 * - a move of shards 0..1 under the two kits' write load: every acknowledged write is on the
 *   target (and its standby), the source holds nothing written after the fence, shards 2..3 and
 *   the mod-shard tables stay on the source, ids continue past the source's;
 * - kill -9 of the mover after the fence, then --abort restores the source, and (another run)
 *   --resume completes; verify is clean, then names a row changed by hand (exit 3);
 * - bad input: one line, exit non-zero, nothing changed (also a range already moving);
 * - a source without wal_level=logical is refused with a clear error, and a target that already
 *   holds rows of the moving shards is refused and keeps them (the abort drops only what the move
 *   itself created).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { devAddPair } from '../../src/ops/dev/dev-add-pair.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { resolveSchema } from '../../src/config/config.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { isShardKitError } from '../../src/errors.js';
import { runMove } from '../../src/moves/move-runner.js';
import { createPostgresMoveEngine } from '../../src/moves/postgres/index.js';
import { PostgresInstance } from '../../src/ops/postgres/postgres-instance.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { CLI, assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { killMoverAfter } from './kill-mover.js';
import { ackedOn } from './crash-ledger.js';
import { ackedAfter, newLedger, writeLoad } from '../failover/ledger.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const SOURCE = 'PG001A';

describe('moves on PostgreSQL: shards move|verify|drop-moved with logical replication (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgmove-'));
  const configPath = join(dir, 'shardkit.json');
  const args = ['--config', configPath, '--data', dir];
  let c: DevCluster;
  const kits: ShardKit[] = [];
  const sql = async <T extends Record<string, unknown>>(host: string, text: string, values: unknown[] = []) => pgServer(c, host).sql<T>(text, values, 'shardkit');
  const tablesIn = async (host: string, ns: string): Promise<string[]> =>
    (await sql<{ t: string }>(host, "SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1", [ns])).map((r) => r.t);
  const ids = async (host: string, ns: string, table = 'pins'): Promise<string[]> =>
    (await tablesIn(host, ns)).includes(table) ? (await sql<{ id: string }>(host, `SELECT local_id::text AS id FROM "${ns}"."${table}" ORDER BY local_id`)).map((r) => r.id) : [];
  const mapVersion = async (): Promise<number> => {
    const store = createTopologyStore(c.config().topologyStore, { dataDir: dir });
    try {
      return (await store.read())!.version;
    } finally {
      await store.close();
    }
  };
  /** Publications, subscriptions and slots a move may leave behind. */
  const replicationLeft = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const h of [SOURCE, 'PG002A']) {
      for (const r of await sql<{ n: string }>(h, "SELECT 'pub ' || pubname AS n FROM pg_publication UNION ALL SELECT 'sub ' || subname FROM pg_subscription UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_type = 'logical'")) out.push(`${h}: ${r.n}`);
    }
    return out;
  };

  /** Runs the CLI mover of 2..3 until `phase` is recorded, then kill -9. */
  const killAfter = (phase: string) => killMoverAfter(phase, ['2..3', '--to', 'PG002A', '--to-slave', 'PG002B', '--hold-ms', '30000', '--json', ...args]);

  before(async () => {
    ensureBuilt();
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 4, modShards: 4 });
    const added = await cli(['dev', 'add-pair', '--dir', dir, '--json']);
    assert.equal(added.code, 0, added.stderr);
    assert.deepEqual(JSON.parse(added.stdout), { pair: 2, master: 'PG002A', slave: 'PG002B' });
    c = DevCluster.require(dir);
    for (let i = 0; i < 2; i++) kits.push(await ShardKit.open({ configPath, dataDir: dir }));
  });
  after(async () => {
    for (const k of kits) await k.close();
    try {
      const cl = DevCluster.open(dir);
      if (cl) await devClusterDown(cl);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('dev add-pair: an empty writable master and its streaming standby, in the config hosts, in no range', async () => {
    assert.equal((await sql<{ ro: string }>('PG002A', 'SELECT pg_is_in_recovery()::text AS ro'))[0]!.ro, 'false');
    assert.equal((await sql<{ ro: string }>('PG002B', 'SELECT pg_is_in_recovery()::text AS ro'))[0]!.ro, 'true');
    assert.equal((await sql<{ w: string }>(SOURCE, "SELECT current_setting('wal_level') AS w"))[0]!.w, 'logical');
    assert.ok(Object.keys(c.config().hosts).includes('PG002B'));
  });

  test('a move of shards 0..1 under two services\' writes: every acknowledged write on the target, none on the source after the fence, shards 2..3 stay', async () => {
    for (let s = 0; s <= 3; s++) for (let i = 0; i < 30; i++) await kits[0]!.objects.create('pin', { s, i }, { shard: s });
    const objectTables = fleetTables(resolveSchema(c.config()), 'objects');
    const lookupsBefore = (await tablesIn(SOURCE, db(0))).filter((t) => !objectTables.includes(t));
    assert.ok(lookupsBefore.length > 0, 'the dev cluster keeps mod-shard tables beside object shard 0');
    let release!: () => void;
    const live = newLedger();
    const running = writeLoad(kits, [0, 1, 2, 3], new Promise<void>((r) => (release = r)), 2, live);
    let moved;
    try {
      await ackedAfter(live, Date.now());
      moved = await cli(['shards', 'move', '0..1', '--to', 'PG002A', '--to-slave', 'PG002B', '--json', ...args]);
      // Writes after the switch too, on each moved shard: waited for per shard (the assertion
      // below needs one on shard 0 and one on shard 1), not 4 on either within 5 s.
      const switchedAt = Date.now();
      await ackedOn(live, [0, 1], switchedAt);
    } finally {
      release();
    }
    const ledger = await running;
    assert.equal(moved.code, 0, moved.stderr);
    const lines = moved.stdout.trim().split('\n').map((l) => JSON.parse(l) as { event: string; phase?: string; outcome?: string; verifiedRows?: number; freezeToSwitchMs?: number; steps?: Record<string, number> });
    const result = lines.at(-1)!;
    assert.equal(result.outcome, 'switched');
    // The result line names each engine step's time, so an operator sees what the freeze spent on this host.
    const steps = result.steps ?? {};
    assert.ok(['fence: COMMIT', 'copy: tables'].every((k) => k in steps) && Object.values(steps).every((ms) => Number.isInteger(ms) && ms >= 0), `steps ${JSON.stringify(steps)}`);
    assert.ok(result.verifiedRows! >= 60, `verified ${result.verifiedRows} rows`);
    assert.deepEqual(lines.filter((l) => l.event === 'phase').map((l) => l.phase).filter((p, i, a) => a.indexOf(p) === i), ['started', 'copied', 'frozen', 'fenced', 'switched']);

    for (let s = 0; s <= 3; s++) {
      const acked = ledger.acked.map((a) => pinterestId.decode(a.id)).filter((p) => p.shard === s).map((p) => String(p.localId));
      if (s <= 1) {
        const onTarget = await ids('PG002A', db(s));
        const onSource = await ids(SOURCE, `${db(s)}_moved`);
        for (const id of acked) assert.ok(onTarget.includes(id), `acknowledged pin ${id} of shard ${s} is on the target`);
        for (const id of onSource) assert.ok(onTarget.includes(id), `source row ${id} of shard ${s} reached the target`);
        assert.ok(onTarget.length > onSource.length, `shard ${s} took writes on the target after the switch`);
        assert.deepEqual(await ids(SOURCE, db(s)), [], `shard ${s} has no live pins table on the source`);
        // Ids made on the target continue past the source's (identity sequences are not replicated).
        const maxSource = onSource.reduce((m, x) => (BigInt(x) > m ? BigInt(x) : m), 0n);
        for (const x of onTarget.filter((y) => !onSource.includes(y))) assert.ok(BigInt(x) > maxSource, `new id ${x} on shard ${s} is past the source's ${maxSource}`);
      } else {
        const onSource = await ids(SOURCE, db(s));
        for (const id of acked) assert.ok(onSource.includes(id), `acknowledged pin ${id} of shard ${s} is on the source`);
        // Writes to the source's other shards during the move never reach the target.
        assert.deepEqual(await tablesIn('PG002A', db(s)), [], `shard ${s} never appears on the target`);
      }
    }
    assert.deepEqual((await tablesIn(SOURCE, db(0))).filter((t) => !objectTables.includes(t)), lookupsBefore, 'mod-shard tables stayed on the source');
    assert.deepEqual((await tablesIn(SOURCE, db(0))).filter((t) => objectTables.includes(t)), [], 'no live object table of shard 0 on the source');
    assert.deepEqual(await replicationLeft(), [], 'no publication, subscription or slot left');
    // The target's standby follows its master by streaming: it has the copy.
    const want = (await ids('PG002A', db(0))).length;
    for (let i = 0; i < 200 && (await ids('PG002B', db(0))).length < want; i++) await sleep(100);
    assert.equal((await ids('PG002B', db(0))).length, want);
    for (const a of ledger.acked.slice(-20)) assert.ok((await kits[1]!.objects.get(a.id)).id === a.id);
    console.log(`moved 2 shards under load: ${ledger.acked.length} acknowledged writes, errors ${JSON.stringify([...ledger.errors])}, writes held ${result.freezeToSwitchMs} ms`);

    const dropped = await cli(['shards', 'drop-moved', '--json', ...args]);
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.equal((JSON.parse(dropped.stdout) as { dropped: Array<{ files: number }> }).dropped[0]!.files, 2);
    assert.deepEqual(await tablesIn(SOURCE, `${db(0)}_moved`), []);
    assert.ok((await ids('PG002A', db(0))).length >= 60);
  });

  test('bad input: a range across a boundary, an unknown host, the source as target, a range already moving; one line, exit non-zero, nothing changed', async () => {
    // Shards 0..1 are on PG002A now, 2..3 on PG001A.
    let version = await mapVersion();
    assertBadInput(await cli(['shards', 'move', '1..2', '--to', SOURCE, ...args]), 'range across a boundary', /cross a range boundary/);
    assertBadInput(await cli(['shards', 'move', '2..3', '--to', 'PG009A', ...args]), 'unknown host', /unknown host PG009A/);
    assertBadInput(await cli(['shards', 'move', '2..3', '--to', SOURCE, ...args]), 'target is the source', /INVALID_ARGUMENT/);
    assertBadInput(await cli(['shards', 'move', '2..3', '--resume', ...args]), 'no such move', /UNKNOWN_MOVE/);
    assert.equal(await mapVersion(), version);
    assert.deepEqual(await replicationLeft(), []);
    // A range already moving (a mover killed after the copy): a second move is refused, nothing changes.
    await killAfter('copied');
    version = await mapVersion();
    const rows2 = await ids('PG002A', db(2));
    assertBadInput(await cli(['shards', 'move', '2..3', '--to', 'PG002A', ...args]), 'already moving', /already|moving|frozen/i);
    assert.equal(await mapVersion(), version);
    assert.deepEqual(await ids('PG002A', db(2)), rows2);
    const aborted = await cli(['shards', 'move', '2..3', '--abort', '--json', ...args]);
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.deepEqual(await replicationLeft(), []);
    assert.deepEqual(await tablesIn('PG002A', db(2)), []);
  });

  test('kill -9 of the mover after the fence: --abort puts shards 2..3 back on the source; another kill, then --resume switches them; verify names a row changed by hand', async () => {
    const before2 = await ids(SOURCE, db(2));
    assert.ok(before2.length > 0);

    await killAfter('fenced');
    assert.deepEqual(await ids(SOURCE, db(2)), [], 'fenced: the live table is gone from the source');
    const aborted = await cli(['shards', 'move', '2..3', '--abort', '--json', ...args]);
    assert.equal(aborted.code, 0, aborted.stderr);
    assert.equal((JSON.parse(aborted.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'aborted');
    assert.deepEqual(await ids(SOURCE, db(2)), before2);
    assert.deepEqual(await tablesIn(SOURCE, `${db(2)}_moved`), []);
    assert.deepEqual(await tablesIn('PG002A', db(2)), []);
    assert.deepEqual(await replicationLeft(), []);
    // The services write there again.
    const back = await kits[0]!.objects.create('pin', { back: true }, { shard: 2 });
    assert.ok((await ids(SOURCE, db(2))).includes(String(pinterestId.decode(back.id).localId)));

    await killAfter('fenced');
    const resumed = await cli(['shards', 'move', '2..3', '--resume', '--json', ...args]);
    assert.equal(resumed.code, 0, resumed.stderr);
    assert.equal((JSON.parse(resumed.stdout.trim().split('\n').at(-1)!) as { outcome: string }).outcome, 'switched');
    assert.deepEqual(await ids('PG002A', db(2)), [...before2, String(pinterestId.decode(back.id).localId)]);
    assert.deepEqual(await replicationLeft(), []);

    const clean = await cli(['shards', 'verify', '2..3', '--json', ...args]);
    assert.equal(clean.code, 0, clean.stderr);
    assert.deepEqual((JSON.parse(clean.stdout) as { mismatches: unknown[] }).mismatches, []);
    const changed = before2[Math.floor(before2.length / 2)]!;
    await sql('PG002A', `UPDATE ${db(2)}.pins SET data = '{"by":"hand"}' WHERE local_id = $1`, [changed]);
    // The target against the source's fenced copy (by default a switched move's target is compared with its standby).
    const dirty = await cli(['shards', 'verify', '2..3', '--against-source', ...args]);
    assert.equal(dirty.code, 3, dirty.stderr);
    assert.match(dirty.stdout, new RegExp(`MISMATCH shard 2 pins keys ${changed}\\.\\.${changed}:`));
  });


  test('refused before anything moves: a source without wal_level=logical, a target that already holds rows of the moving shards (kept); the source serves on', async () => {
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    // Test servers run with the default wal_level (replica).
    const plain = await PostgresInstance.start({ databases: ['shardkit'] });
    try {
      const hosts = { ...config.hosts, OLD001A: { host: plain.host, port: plain.port } };
      const engine = createPostgresMoveEngine({ hosts, user: config.storage.user, database: config.storage.database, schema: resolveSchema(config) });
      const mapOn = (master: string) => ShardMap.fromJSON({
        version: 1,
        ranges: [{ range: [0, 3], master, open: true }],
        modShards: { count: 4, ranges: [{ range: [0, 3], master: 'PG001A', slave: 'PG001B' }] },
      });
      try {
        const store = new MemoryTopologyStore({ backing: new MemoryTopologyBacking(mapOn('OLD001A')) });
        await assert.rejects(runMove({ store, engine, hosts: Object.keys(hosts), start: { span: { first: 0, last: 1 }, target: { master: 'PG001A' } } }),
          (err) => isShardKitError(err, 'INVALID_CONFIG') && /wal_level=replica/.test(err.message) && /wal_level=logical/.test(err.message));
        assert.deepEqual((await store.read())!.moves(), []);
        assert.equal((await store.read())!.locate(0).master, 'OLD001A');
        await store.close();

        // PG001A (the mod shards' master) gets a pins table with a row in db00000: a leftover the move must not overwrite or drop.
        await sql('PG001A', 'CREATE TABLE db00000.pins (local_id BIGINT PRIMARY KEY, data TEXT NOT NULL, ts BIGINT NOT NULL)');
        await sql('PG001A', "INSERT INTO db00000.pins VALUES (1, '{}', 0)");
        const sourceRows = await ids('PG002A', db(0));
        const store2 = new MemoryTopologyStore({ backing: new MemoryTopologyBacking(mapOn('PG002A')) });
        await assert.rejects(runMove({ store: store2, engine, hosts: Object.keys(hosts), start: { span: { first: 0, last: 1 }, target: { master: 'PG001A' } } }),
          (err) => isShardKitError(err, 'ALREADY_EXISTS') && /db00000\.pins on the target PG001A already holds rows/.test(err.message));
        assert.deepEqual(await ids('PG001A', db(0)), ['1'], 'the target keeps its rows');
        assert.deepEqual(await ids('PG002A', db(0)), sourceRows, 'the source is untouched');
        assert.deepEqual(await replicationLeft(), []);
        assert.deepEqual((await store2.read())!.moves(), []);
        await store2.close();
        await sql('PG001A', 'DROP TABLE db00000.pins');
      } finally {
        await engine.close();
      }
    } finally {
      await plain.stop();
    }
  });

  test('a move there and back before drop-moved: drop-moved drops both old copies and never the live shards, forgets both records, and the shards move away again', async () => {
    // Before: drop-moved refused the first record (MOVE_FENCE_MISMATCH: the source has live
    // tables, the range being back there) and so every record after it, and the stale copy made
    // the next move off that pair fail at its fence (MOVE_TABLE_CLASH; the PostgreSQL review).
    const there = await cli(['shards', 'move', '0..1', '--to', SOURCE, '--to-slave', 'PG001B', ...args]);
    assert.equal(there.code, 0, there.stderr);
    const back = await cli(['shards', 'move', '0..1', '--to', 'PG002A', '--to-slave', 'PG002B', ...args]);
    assert.equal(back.code, 0, back.stderr);
    const live = await ids('PG002A', db(0));
    assert.ok(live.length > 0);
    const dropped = await cli(['shards', 'drop-moved', '--json', ...args]);
    assert.equal(dropped.code, 0, dropped.stderr);
    assert.equal((JSON.parse(dropped.stdout) as { dropped: Array<{ range: number[] }> }).dropped.filter((d) => d.range[0] === 0).length, 2, 'both records of 0..1');
    for (const host of [SOURCE, 'PG002A']) assert.deepEqual(await tablesIn(host, `${db(0)}_moved`), [], `no old copy left on ${host}`);
    assert.deepEqual(await ids('PG002A', db(0)), live, 'the live shard stays');
    const store = createTopologyStore(c.config().topologyStore, { dataDir: dir });
    try {
      assert.deepEqual((await store.read())!.moves(), [], 'both records forgotten');
    } finally {
      await store.close();
    }
    const again = await cli(['shards', 'move', '0..1', '--to', SOURCE, '--to-slave', 'PG001B', ...args]);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual(await ids(SOURCE, db(0)), live, 'moved away again, every row');
    assert.equal((await cli(['shards', 'drop-moved', ...args])).code, 0);
  });
});
