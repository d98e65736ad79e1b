/**
 * MariaDB moves and failovers of their target pair (a cache review and a static review found each):
 * - a planned failover of a pair a move copies to is refused: the move's replication connection
 *   runs on the master past its read_only fence, and the mover keeps working on that server
 *   between map edits. Before, the failover went through, the mover lifted read_only on the old
 *   master (now a slave) and its abort failed there ("you have a running slave ''");
 * - after a completed move onto the pair, a planned failover leaves the old master replicating
 *   (before: error 1236, a position the new master never had);
 * - the target master killed during the move and failed over (--emergency): the move aborts on
 *   the new master, and the old one, rebuilt as its slave, keeps no move connection.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { resolveSchema } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { isShardKitError } from '../../src/errors.js';
import { fleetTables } from '../../src/storage/shard-names.js';
import { runMove } from '../../src/moves/move-runner.js';
import { createMariadbMoveEngine } from '../../src/moves/mariadb/index.js';
import { moveAdmin } from '../../src/moves/mariadb/move-admin.js';
import { emergencyFailover, gtidVariable, gtidWait, openFleet, plannedFailover, rebuildSlave } from '../../src/ops/failover/index.js';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe } from './mariadb-probe.js';

function moveEngine(config: ReturnType<typeof openFleet>['config'], admin: ReturnType<typeof openFleet>['admin']) {
  if (config.storage.backend !== 'mysql') throw new Error('not a mysql config');
  const hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
  const storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
  return createMariadbMoveEngine({ hosts, ...storage, tables: fleetTables(resolveSchema(config), 'objects'), admin: moveAdmin(admin) });
}

describe('MariaDB moves and failovers of their target pair (real MariaDB)', () => {
  let stop: () => Promise<void>;
  let dir: string;
  before(async () => {
    const started = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-mytarget-' });
    stop = started.stop;
    dir = started.dir;
  });
  after(async () => {
    await stop?.();
  });

  test('a planned failover of a pair a move copies to is refused (VERSION_CONFLICT naming the move), nothing changed; the move then aborts and the pair fails over', async () => {
    const fleet = openFleet({ dir });
    const config = fleet.config;
    if (config.storage.backend !== 'mysql') throw new Error('not a mysql config');
    const admin = fleet.admin;
    const { query, tablesIn } = adminProbe(() => admin);
    const engine = moveEngine(config, admin);
    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    try {
      for (let i = 0; i < 6; i++) await kit.objects.create('pin', { i }, { shard: i % 2 });
      let refused: unknown;
      const outcome = await runMove({
        store, engine, hosts: Object.keys(config.hosts),
        start: { span: { first: 0, last: 1 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 30_000 },
        afterPhase: async (phase) => {
          if (phase !== 'copied') return;
          refused = await plannedFailover(fleet, 'MySQL002A', { holdMs: 30_000 }).then(() => undefined, (err: unknown) => err);
          throw new Error('the operator aborts the move');
        },
      }).then((r) => r, (err: unknown) => err);
      assert.ok(isShardKitError(refused, 'VERSION_CONFLICT') && /target of move move-0-1-/.test(refused.message) && /shards move --abort/.test(refused.message), `refused: ${String(refused)}`);
      assert.match(String(outcome), /the operator aborts the move/);
      const [ro] = await query<{ r: number | string }>('MySQL002A', 'SELECT @@GLOBAL.read_only AS r');
      assert.equal(Number(ro?.r), 0, 'the master was never fenced');
      const map = (await store.read())!;
      assert.deepEqual(map.moves(), [], 'no move or failover left recorded');
      assert.equal(map.locate(0).master, 'MySQL001A');
      for (const host of ['MySQL002A', 'MySQL002B']) assert.deepEqual(await tablesIn(host, 'db00000'), [], `no copy on ${host}`);
      // No move left: the failover goes through, and back.
      await plannedFailover(fleet, 'MySQL002A', { holdMs: 30_000 });
      await plannedFailover(fleet, 'MySQL002B', { holdMs: 30_000 });
      await kit.objects.create('pin', { after: true }, { shard: 4 });
    } finally {
      await engine.close();
      await store.close();
      await kit.close();
      await fleet.store.close();
    }
  });

  test('a planned failover of a pair that a move switched shards to: the old master replicates from the new one (the move\'s filtered-out transactions are no position to ask for)', async () => {
    const fleet = openFleet({ dir });
    const config = fleet.config;
    if (config.storage.backend !== 'mysql') throw new Error('not a mysql config');
    const admin = fleet.admin;
    const { query } = adminProbe(() => admin);
    const engine = moveEngine(config, admin);
    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    try {
      for (let i = 0; i < 4; i++) await kit.objects.create('pin', { i }, { shard: 2 + (i % 2) });
      await runMove({
        store, engine, hosts: Object.keys(config.hosts),
        start: { span: { first: 2, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 30_000 },
        // Writes to the moving shards (the target binlogs them in the source's domain), then to the
        // source's shards that stay: the move's connection applies those filtered out, which moves
        // its applied position in that domain past anything the target binlogs.
        afterPhase: async (phase) => {
          if (phase !== 'copied') return;
          for (let i = 0; i < 4; i++) await kit.objects.create('pin', { moving: i }, { shard: 2 + (i % 2) });
          for (let i = 0; i < 6; i++) await kit.objects.create('pin', { other: i }, { shard: i % 2 });
        },
      });
      assert.equal((await store.read())!.locate(2).master, 'MySQL002A');
      await plannedFailover(fleet, 'MySQL002A', { holdMs: 30_000 });
      const written = await kit.objects.create('pin', { afterFailover: true }, { shard: 2 });
      assert.equal((await kit.objects.get(written.id))?.data.afterFailover, true);
      const reached = await gtidWait(admin, 'MySQL002A', await gtidVariable(admin, 'MySQL002B', 'gtid_binlog_pos'), 30_000);
      const [status] = await query<{ Slave_IO_Running: string; Last_IO_Error: string }>('MySQL002A', 'SHOW SLAVE STATUS');
      assert.ok(reached, `the old master MySQL002A applies its new master's writes: IO ${status?.Slave_IO_Running}, ${status?.Last_IO_Error}`);
      assert.equal(status?.Slave_IO_Running, 'Yes', status?.Last_IO_Error);
    } finally {
      await engine.close();
      await store.close();
      await kit.close();
      await fleet.store.close();
    }
  });

  test('the target master killed after the copy and failed over (--emergency): the move aborts, its copy is dropped on the new master, the old master rebuilt as slave keeps no move connection, and the pair fails back', async () => {
    const fleet = openFleet({ dir });
    const config = fleet.config;
    const admin = fleet.admin;
    const { tablesIn, moveConnections, query } = adminProbe(() => admin);
    const engine = moveEngine(config, admin);
    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    const before = (await store.read())!;
    const target = { master: before.locate(4).master, slave: before.locate(4).slave! };
    try {
      const outcome = await runMove({
        store, engine, hosts: Object.keys(config.hosts),
        start: { span: { first: 0, last: 1 }, target, holdMs: 30_000 },
        afterPhase: async (phase) => {
          if (phase !== 'copied') return;
          await DevCluster.require(dir).instance(target.master).kill();
          await emergencyFailover(fleet, target.master);
        },
      }).then((r) => r, (err: unknown) => err);
      assert.ok(isShardKitError(outcome, 'VERSION_CONFLICT') && /failed over since the move started/.test(outcome.message), `the move is refused before its freeze: ${String(outcome)}`);
      assert.ok(!/could not be cleaned up/.test(outcome.message), `the mover's own abort cleaned up: ${outcome.message}`);
      const map = (await store.read())!;
      assert.deepEqual(map.moves().filter((m) => m.range[0] === 0), [], 'the move is no longer recorded');
      assert.equal(map.locate(0).master, 'MySQL001A');
      assert.equal(map.locate(4).master, target.slave, 'the target pair failed over');
      assert.deepEqual(await tablesIn(target.slave, 'db00000'), [], 'no copy on the new master');
      // The old master comes back as the new master's slave: no copy, no move connection left.
      await rebuildSlave(fleet, target.slave, { slave: target.master });
      assert.deepEqual(await moveConnections(target.master), []);
      assert.deepEqual(await tablesIn(target.master, 'db00000'), []);
      const [status] = await query<{ Slave_IO_Running: string; Last_IO_Error: string }>(target.master, 'SHOW SLAVE STATUS');
      assert.equal(status?.Slave_IO_Running, 'Yes', status?.Last_IO_Error);
      await plannedFailover(fleet, target.slave, { holdMs: 30_000 });
      const back = await kit.objects.create('pin', { back: true }, { shard: 4 });
      assert.equal((await kit.objects.get(back.id))?.data.back, true);
    } finally {
      await engine.close();
      await store.close();
      await kit.close();
      await fleet.store.close();
    }
  });
});
