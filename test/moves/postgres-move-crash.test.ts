/**
 * kill -9 of a master during a PostgreSQL shard move, on a real dev cluster (`dev up --engine
 * postgres`: object shards 0..3 on PG001A, then `dev add-pair`: PG002A/PG002B), with two services
 * (ShardKit instances following the file topology store) writing and keeping a ledger of the
 * writes they acknowledged. The mover runs in this process, on the same store.
 * - the source master killed at the lag gate (after the copy, before the freeze): the move aborts
 *   by itself; the abort drops the subscription and the copy on the target but cannot reach the
 *   source, so the record stays 'aborting'. Restarted, the source serves, --abort completes (no
 *   publication, subscription or slot left) and a new move of the range succeeds;
 * - the target master killed after the fence (the catch-up): no switch; the abort puts the source
 *   back in service although the target is down (nothing was written on the fenced source), the
 *   freeze expires by its hold budget and the services write there again; with the target
 *   restarted --abort completes, and a new move succeeds with a clean verify.
 * - the source master killed inside the initial copy (the target's COPY into one table held by a
 *   lock until the source is back, so on every run): the copy starts over from a new slot by
 *   itself and the same mover run switches the range, verify clean;
 * - the mover (the CLI) killed inside the copy, held there the same way: --abort restores the
 *   source; killed there again, --resume copies again and switches;
 * - the target master killed inside the copy (the lock's session dies with it): the copy starts
 *   over once it is back and the same run switches.
 * Every test ends with 0 acknowledged writes lost (each on the host the final map names).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { devAddPair } from '../../src/ops/dev/dev-add-pair.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { postgresDialect } from '../../src/storage/postgres/postgres-dialect.js';
import pg from 'pg';
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { CLI, ROOT } from '../cli/cli-harness.js';
import { createTopologyStore } from '../../src/topology/index.js';
import type { TopologyStore } from '../../src/topology/topology-store.js';
import { resolveSchema } from '../../src/config/config.js';
import { createBackend } from '../../src/kit/backend-factory.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import { createPostgresMoveEngine, POSTGRES_MOVE_MAX_LAG_BYTES, type PostgresMoveEngine } from '../../src/moves/postgres/index.js';
import { ackedOn, startLoad } from './crash-ledger.js';
import { cleanlyAborted, direction, forgetSwitched, moveAgain, noneLost, runMoveSuite, type MoveSuiteFixture } from '../conformance/move-suite.js';
import { copySessionName } from '../../src/moves/postgres/engine-base.js';
import { isShardKitError } from '../../src/errors.js';

const db = (shard: number) => `db${String(shard).padStart(5, '0')}`;
const PAIR1 = { master: 'PG001A', slave: 'PG001B' };
const PAIR2 = { master: 'PG002A', slave: 'PG002B' };
const ALL = [0, 1, 2, 3];

describe('moves on PostgreSQL: kill -9 of the source or the target master during a move (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgcrash-'));
  const configPath = join(dir, 'shardkit.json');
  let c: DevCluster;
  let store: TopologyStore;
  let engine: PostgresMoveEngine;
  let hosts: string[];
  let objectTables: string[];
  const kits: ShardKit[] = [];
  const sql = async <T extends Record<string, unknown>>(host: string, text: string, values: unknown[] = []) => pgServer(c, host).sql<T>(text, values, 'shardkit');
  const tablesIn = async (host: string, ns: string): Promise<string[]> =>
    (await sql<{ t: string }>(host, "SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r' ORDER BY 1", [ns])).map((r) => r.t);
  const ids = async (host: string, ns: string): Promise<string[]> =>
    (await tablesIn(host, ns)).includes('pins') ? (await sql<{ id: string }>(host, `SELECT local_id::text AS id FROM "${ns}".pins ORDER BY local_id`)).map((r) => r.id) : [];
  const map = async () => (await store.read())!;
  /** Publications, subscriptions and slots a move may leave behind. */
  const replicationLeft = async (): Promise<string[]> => {
    const out: string[] = [];
    for (const h of [PAIR1.master, PAIR2.master]) {
      for (const r of await sql<{ n: string }>(h, "SELECT 'pub ' || pubname AS n FROM pg_publication UNION ALL SELECT 'sub ' || subname FROM pg_subscription UNION ALL SELECT 'slot ' || slot_name FROM pg_replication_slots WHERE slot_type = 'logical'")) out.push(`${h}: ${r.n}`);
    }
    return out;
  };
  const move = (options: Omit<Parameters<typeof runMove>[0], 'store' | 'engine' | 'hosts'>) => runMove({ store, engine, hosts, maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, ...options });
  const load = (shards: number[]) => startLoad(kits, shards);
  const pgConfig = () => {
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    return { ...config, storage: config.storage };
  };
  let fx: MoveSuiteFixture;
  /**
   * Shard `shard`'s tables made on `host` beforehand (empty: prepare takes them as its own), and
   * its pins held in SHARE mode: a copy's COPY FROM into it waits until `release`.
   */
  const holdOnTarget = async (host: string, shard: number): Promise<{ release(): Promise<void>; end(): Promise<void> }> => {
    const config = pgConfig();
    for (const q of postgresDialect.createShard(resolveSchema(config), { host, shard, fleet: 'objects' })) await sql(host, q);
    const address = config.hosts[host]!;
    const holder = new pg.Client({ host: address.socket ?? address.host, port: address.port, user: config.storage.user, database: config.storage.database });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${db(shard)}.pins IN SHARE MODE`);
    let held = true;
    return {
      release: async () => {
        if (!held) return;
        held = false;
        await holder.query('COMMIT');
      },
      end: () => holder.end().catch(() => undefined),
    };
  };

  before(async () => {
    await devUp({ dir, engine: 'postgres', pairs: 1, shards: 4, modShards: 4 });
    await devAddPair(dir);
    c = DevCluster.require(dir);
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    hosts = Object.keys(config.hosts);
    objectTables = fleetTables(resolveSchema(config), 'objects');
    engine = createPostgresMoveEngine({ hosts: config.hosts, user: config.storage.user, database: config.storage.database, schema: resolveSchema(config) });
    store = createTopologyStore(config.topologyStore, { dataDir: dir });
    for (let i = 0; i < 2; i++) kits.push(await ShardKit.open({ configPath, dataDir: dir }));
    for (let s = 0; s <= 3; s++) for (let i = 0; i < 10; i++) await kits[0]!.objects.create('pin', { s, i }, { shard: s });
    fx = {
      pairs: [PAIR1, PAIR2],
      hosts,
      kits,
      store: () => store,
      engine: () => engine,
      runOptions: { maxLag: POSTGRES_MOVE_MAX_LAG_BYTES },
      service: async (topology) => {
        const kit = new ShardKit({ backend: await createBackend({ config, dataDir: dir, schema: resolveSchema(config) }), schema: resolveSchema(config), topology, ownsResources: true });
        await kit.ready();
        return kit;
      },
      changeRow: async (host, shard) => {
        const changed = await sql<{ id: string }>(host, `UPDATE "${db(shard)}".pins SET data = '{"changed":"by hand"}' WHERE local_id = (SELECT min(local_id) FROM "${db(shard)}".pins) RETURNING local_id::text AS id`);
        assert.equal(changed.length, 1);
      },
      openWrite: async (host, shard) => {
        const address = config.hosts[host]!;
        const client = new pg.Client({ host: address.socket ?? address.host, port: address.port, user: pgConfig().storage.user, database: pgConfig().storage.database });
        await client.connect();
        await client.query('BEGIN');
        const r = await client.query<{ id: string }>(`INSERT INTO "${db(shard)}".pins (data, ts) VALUES ('{"open":"transaction"}', $1) RETURNING local_id::text AS id`, [Date.now()]);
        return {
          localId: r.rows[0]!.id,
          commit: async () => {
            try {
              await client.query('COMMIT');
            } finally {
              await client.end();
            }
          },
        };
      },
      stallApply: async (target, shard) => {
        // The subscription's apply worker waits on the lock; the source goes on writing.
        const address = config.hosts[target]!;
        const holder = new pg.Client({ host: address.socket ?? address.host, port: address.port, user: pgConfig().storage.user, database: pgConfig().storage.database });
        await holder.connect();
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE "${db(shard)}".pins IN ACCESS EXCLUSIVE MODE`);
        let held = true;
        return {
          release: async () => {
            if (!held) return;
            held = false;
            await holder.query('ROLLBACK');
            await holder.end();
          },
        };
      },
      liveIds: (host, shard) => ids(host, db(shard)),
      objectTablesOn: async (host, shard) => (await tablesIn(host, db(shard))).filter((t) => objectTables.includes(t)),
      fencedAside: (host, shard) => tablesIn(host, `${db(shard)}_moved`),
      leftOnTarget: async (target) => (await sql<{ n: string }>(target, 'SELECT subname AS n FROM pg_subscription')).map((r) => `subscription ${r.n} on ${target}`),
      leftBehind: () => replicationLeft(),
      servers: {
        kill: (host) => pgServer(c, host).kill(),
        start: (host) => pgServer(c, host).start(),
        // The fence renames the source's schemas aside (<db>_moved).
        fencedRows: async (source, shards) => (await Promise.all(shards.map(async (s) => (await ids(source.master, `${db(s)}_moved`)).map((x) => `${s}:${x}`)))).flat(),
      },
      // Every scenario under the load of all four shards, its range moved from where the map has it.
      ranges: { moverDies: { span: [0, 1], load: ALL }, sourceAtLagGate: { span: [0, 1], load: ALL }, targetAtCatchUp: { span: [2, 3], load: ALL }, sourceAfterFence: { span: [2, 3], load: ALL } },
    };
  });
  after(async () => {
    for (const k of kits) await k.close();
    await engine?.close();
    await store?.close();
    try {
      const cl = DevCluster.open(dir);
      if (cl) await devClusterDown(cl);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  // The shared scenarios: the source killed at the lag gate, the target at the catch-up, the source after the fence.
  runMoveSuite({ moverDies: [], killServers: true, fenceDiesWithSource: false, lagGate: true, openTransactions: true }, () => fx);

  test('kill -9 of the source master in the middle of the copy (on every run: the target\'s COPY of a table is held by a lock until the source is back): the copy starts over by itself and the same mover run switches, verify clean, no slot left, 0 acknowledged writes lost', async () => {
    // Shards 0..1 move to the other pair (the suite above leaves them on either), and their master is the source that dies.
    await forgetSwitched(fx);
    const span: [number, number] = [0, 1];
    const { from, to } = await direction(fx, span);
    const w = load([0, 1, 2, 3]);
    const source = pgServer(c, from.master);
    // The copy's COPY FROM into shard 0's pins waits until the source has died and come back, so
    // the source dies inside the copy whatever the machine's speed.
    const { release, end } = await holdOnTarget(to.master, 0);
    let crash: Promise<void> | undefined;
    const events: MoveEvent[] = [];
    try {
      await ackedOn(w.ledger, [0, 1, 2, 3], Date.now());
      const result = await runMove({
        store, engine, hosts, maxLag: POSTGRES_MOVE_MAX_LAG_BYTES,
        start: { span: { first: 0, last: 1 }, target: to, holdMs: 30_000 },
        onEvent: (e) => events.push(e),
        // The first progress report comes from inside the copy, once the slot and its snapshot exist.
        onProgress: () => {
          crash ??= (async () => {
            await source.kill();
            await source.start();
            await release();
          })();
        },
      });
      await crash;
      assert.equal(result.outcome, 'switched');
      assert.deepEqual(result.verify?.mismatches, []);
      const copied = events.find((e) => e.phase === 'copied');
      assert.ok(Number(copied?.detail?.copyAttempts ?? 0) >= 2, `the copy started over: ${JSON.stringify(copied)}`);
      const phases = events.map((e) => e.phase).filter((p, i, a) => a.indexOf(p) === i);
      assert.deepEqual(phases, ['started', 'copied', 'frozen', 'fenced', 'switched']);
      for (const s of span) assert.equal((await map()).locate(s).master, to.master);
      assert.deepEqual(await replicationLeft(), []);
      await ackedOn(w.ledger, [0, 1], Date.now());
    } finally {
      await crash?.catch(() => undefined);
      await release().catch(() => undefined);
      await end();
      await source.start();
      await w.stop();
    }
    await noneLost(fx, w.ledger, 'source killed inside the copy');
  });

  test('kill -9 of the mover in the middle of the copy (held there by a lock on one target table): --abort restores the source with nothing left behind; killed there again, --resume copies again and switches, verify clean, 0 acknowledged writes lost', async () => {
    await forgetSwitched(fx);
    const span: [number, number] = [2, 3];
    const { from, to } = await direction(fx, span);
    const config = pgConfig();
    const schema = resolveSchema(config);
    const target = config.hosts[to.master]!;
    /** The CLI's mover, killed once its JSON lines show the copy running with shard 2's pins in flight (the target's COPY into it waits for a lock the test holds). */
    const killMidCopy = async (): Promise<string> => {
      for (const q of postgresDialect.createShard(schema, { host: to.master, shard: span[0], fleet: 'objects' })) await sql(to.master, q);
      const holder = new pg.Client({ host: target.socket ?? target.host, port: target.port, user: config.storage.user, database: config.storage.database });
      await holder.connect();
      try {
        await holder.query('BEGIN');
        await holder.query(`LOCK TABLE ${db(span[0])}.pins IN SHARE MODE`);
        const child = spawn(process.execPath, [CLI, 'shards', 'move', `${span[0]}..${span[1]}`, '--to', to.master, '--to-slave', to.slave!, '--hold-ms', '30000', '--json', '--config', configPath, '--data', dir], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
        const exited = new Promise((r) => child.on('exit', r));
        let stderr = '';
        child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
        const id = await new Promise<string>((resolve, reject) => {
          createInterface({ input: child.stdout }).on('line', (l) => {
            // The progress lines name the tables in flight: the held one shows up there, with its bytes read so far.
            const e = JSON.parse(l) as { event: string; phase?: string; moveId?: string; rowsTotal?: number; tables?: Array<{ table: string; rowsCopied: number; bytesCopied: number }> };
            if (e.event === 'progress' && e.phase === 'started' && e.tables?.some((t) => t.table === `"${db(span[0])}"."pins"`)) try {
              // Each table in flight: one of the moving shards', with its rows and bytes so far; the copy's total beside them.
              for (const t of e.tables) {
                assert.match(t.table, new RegExp(`^"(${db(span[0])}|${db(span[1])})"\\."\\w+"$`), l);
                assert.ok(Number.isInteger(t.rowsCopied) && t.rowsCopied >= 0 && Number.isInteger(t.bytesCopied) && t.bytesCopied >= 0, l);
              }
              assert.ok(typeof e.rowsTotal === 'number' && e.rowsTotal > 0, l);
              resolve(e.moveId!);
            } catch (err) {
              reject(err as Error);
            }
          });
          child.on('exit', (code) => reject(new Error(`the mover exited (${code}) before its copy ran: ${stderr}`)));
        });
        child.kill('SIGKILL');
        await exited;
        assert.equal((await map()).moves().find((m) => m.id === id)?.phase, 'started');
        return id;
      } finally {
        await holder.query('COMMIT').catch(() => undefined);
        await holder.end().catch(() => undefined);
      }
    };
    const w = load([0, 1, 2, 3]);
    try {
      await ackedOn(w.ledger, [0, 1, 2, 3], Date.now());
      const first = await killMidCopy();
      const aborted = await move({ moveId: first, abort: true });
      assert.equal(aborted.outcome, 'aborted');
      await cleanlyAborted(fx, span, from.master, to.master);
      await ackedOn(w.ledger, [span[0], span[1]], Date.now());

      const second = await killMidCopy();
      const events: MoveEvent[] = [];
      const resumed = await move({ moveId: second, onEvent: (e) => events.push(e) });
      assert.equal(resumed.outcome, 'switched');
      assert.deepEqual(resumed.verify?.mismatches, []);
      for (let s = span[0]; s <= span[1]; s++) assert.equal((await map()).locate(s).master, to.master);
      assert.deepEqual(await replicationLeft(), []);
      await ackedOn(w.ledger, [span[0], span[1]], Date.now());
    } finally {
      await w.stop();
    }
    await noneLost(fx, w.ledger, 'mover killed inside the copy');
  });

  test('--abort from a second process while a mover copies (held by a lock on one target table): the copy is ended and nothing of it lands on the target after the abort; the mover stops with UNKNOWN_MOVE; a new move switches; 0 acknowledged writes lost', async () => {
    // Before: the abort dropped what the copy had committed and the marker, then the running
    // copy committed its tables: the next move there met ALREADY_EXISTS (the PostgreSQL review).
    await forgetSwitched(fx);
    const span: [number, number] = [2, 3];
    const { from, to } = await direction(fx, span);
    const config = pgConfig();
    const schema = resolveSchema(config);
    const { release, end } = await holdOnTarget(to.master, span[0]);
    const other = createPostgresMoveEngine({ hosts: config.hosts, user: config.storage.user, database: config.storage.database, schema });
    const w = load([0, 1, 2, 3]);
    let first: Promise<unknown> | undefined;
    try {
      await ackedOn(w.ledger, [0, 1, 2, 3], Date.now());
      let copying!: () => void;
      const inCopy = new Promise<void>((resolve) => (copying = resolve));
      // The first progress report comes from inside the copy; the COPY into shard 2's pins waits for the lock.
      first = move({ start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 }, onProgress: () => copying() }).then(() => undefined, (err: unknown) => err);
      await inCopy;
      const id = (await map()).moves().find((m) => m.range[0] === span[0] && m.phase !== 'switched')!.id;
      const aborting = runMove({ store, engine: other, hosts, maxLag: POSTGRES_MOVE_MAX_LAG_BYTES, moveId: id, abort: true });
      // The abort ends the copy's sessions; then the lock goes, so the abort's DROP can run.
      for (let i = 0; ; i++) {
        const [row] = await sql<{ n: string }>(to.master, 'SELECT count(*)::text AS n FROM pg_stat_activity WHERE application_name = $1', [copySessionName(id)]);
        if (row!.n === '0') break;
        assert.ok(i < 600, `the copy's sessions on ${to.master} are still running after the abort started`);
        await new Promise((r) => setTimeout(r, 100));
      }
      await release();
      assert.equal((await aborting).outcome, 'aborted');
      const err = await first;
      assert.ok(isShardKitError(err, 'UNKNOWN_MOVE'), `the first mover stops, saying another process aborted the move: ${String(err)}`);
      await cleanlyAborted(fx, span, from.master, to.master);
      assert.deepEqual(await replicationLeft(), []);
      // The target takes a new move of the same shards (before: ALREADY_EXISTS, rows left by the ended copy).
      await moveAgain(fx, span, from, to);
      await ackedOn(w.ledger, [span[0], span[1]], Date.now());
    } finally {
      await release().catch(() => undefined);
      await end();
      await first;
      await other.close();
      await w.stop();
    }
    await noneLost(fx, w.ledger, 'abort from a second process during the copy');
  });

  test('kill -9 of the target master in the middle of the copy (held there by a lock on one of its tables, which dies with it): the copy starts over once it is back and the same run switches, verify clean, no slot left, 0 acknowledged writes lost', async () => {
    await forgetSwitched(fx);
    const span: [number, number] = [2, 3];
    const { from, to } = await direction(fx, span);
    const config = pgConfig();
    const target = pgServer(c, to.master);
    const address = config.hosts[to.master]!;
    for (const q of postgresDialect.createShard(resolveSchema(config), { host: to.master, shard: span[0], fleet: 'objects' })) await sql(to.master, q);
    const holder = new pg.Client({ host: address.socket ?? address.host, port: address.port, user: config.storage.user, database: config.storage.database });
    holder.on('error', () => undefined); // it dies with the target
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query(`LOCK TABLE ${db(span[0])}.pins IN SHARE MODE`);
    const w = load([0, 1, 2, 3]);
    let crash: Promise<void> | undefined;
    const events: MoveEvent[] = [];
    try {
      await ackedOn(w.ledger, [0, 1, 2, 3], Date.now());
      const result = await move({
        start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 },
        onEvent: (e) => events.push(e),
        onProgress: () => {
          crash ??= (async () => {
            await target.kill();
            await target.start();
          })();
        },
      });
      await crash;
      assert.equal(result.outcome, 'switched');
      assert.deepEqual(result.verify?.mismatches, []);
      const copied = events.find((e) => e.phase === 'copied');
      assert.ok(Number(copied?.detail?.copyAttempts ?? 0) >= 2, `the copy started over: ${JSON.stringify(copied)}`);
      for (let s = span[0]; s <= span[1]; s++) assert.equal((await map()).locate(s).master, to.master);
      assert.deepEqual(await replicationLeft(), []);
      await ackedOn(w.ledger, [span[0], span[1]], Date.now());
    } finally {
      await crash?.catch(() => undefined);
      await holder.end().catch(() => undefined);
      await target.start();
      await w.stop();
    }
    await noneLost(fx, w.ledger, 'target killed inside the copy');
  });
});
