/**
 * The target pair of a MariaDB move fails over (planned) while the move is copied: the move can
 * never switch there (refuseTurnedTarget), so it aborts. Its abort must clean the copy through the
 * pair's replication, on the pair's new master, and leave the pair's replication healthy both ways.
 * Before: the mover's step before the freeze made the old master, now a slave, writable again
 * (read_only = 0), and the abort's target part ran as root there and failed ("you have a running
 * slave ''"), leaving the move 'aborting' until the pair failed back. The planned failover also
 * left the move's connection applying the source's writes into the old master past its position.
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
import { gtidVariable, gtidWait, openFleet, plannedFailover } from '../../src/ops/failover/index.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { adminProbe } from './mariadb-probe.js';

/** GTIDs of `pos` (a gtid_binlog_pos) as domain-server -> seq. */
const gtids = (pos: string): Map<string, number> => new Map(pos.split(',').filter((g) => g.trim() !== '').map((g) => {
  const [d, s, n] = g.trim().split('-');
  return [`${d}-${s}`, Number(n)];
}));

describe('a MariaDB move whose target pair fails over after the copy (real MariaDB)', () => {
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

  test('the move aborts, its copy is dropped through the pair\'s replication on its new master, no transaction of the slave is missing on the master, and the pair fails back', async () => {
    const fleet = openFleet({ dir });
    const config = fleet.config;
    if (config.storage.backend !== 'mysql') throw new Error('not a mysql config');
    const schema = resolveSchema(config);
    const admin = fleet.admin;
    const { tablesIn, query } = adminProbe(() => admin);
    const hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    const storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    const engine = createMariadbMoveEngine({ hosts, ...storage, tables: fleetTables(schema, 'objects'), admin: moveAdmin(admin) });
    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    try {
      for (let i = 0; i < 6; i++) await kit.objects.create('pin', { i }, { shard: i % 2 });
      const outcome = await runMove({
        store, engine, hosts: Object.keys(config.hosts),
        start: { span: { first: 0, last: 1 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 30_000 },
        afterPhase: async (phase) => {
          if (phase !== 'copied') return;
          await plannedFailover(fleet, 'MySQL002A', { holdMs: 30_000 });
          // Writes the source still takes: the move's connection must not carry them into the old
          // target master past the failover's position (transactions its new master never has).
          for (let i = 0; i < 6; i++) await kit.objects.create('pin', { late: i }, { shard: i % 2 });
        },
      }).then((r) => r, (err: unknown) => err);
      assert.ok(isShardKitError(outcome, 'VERSION_CONFLICT') && /failed over since the move started/.test(outcome.message), `the move is refused before its freeze: ${String(outcome)}`);
      assert.ok(!isShardKitError(outcome, 'MOVE_ABORT_FAILED') && !/could not be cleaned up/.test(outcome.message), `the mover's own abort cleaned up: ${outcome.message}`);
      const [ro] = await query<{ r: number | string }>('MySQL002A', 'SELECT @@GLOBAL.read_only AS r');
      assert.equal(Number(ro?.r), 1, 'the old target master, now a slave, stays read-only');
      const map = (await store.read())!;
      assert.deepEqual(map.moves(), [], 'no move left recorded');
      assert.equal(map.locate(0).master, 'MySQL001A');
      assert.equal(map.locate(4).master, 'MySQL002B', 'the target pair failed over');
      for (const host of ['MySQL002B', 'MySQL002A']) {
        for (const db of ['db00000', 'db00001']) assert.deepEqual(await tablesIn(host, db), [], `no copy of ${db} on ${host}`);
      }
      // Every transaction the slave (the old master) binlogged since is one its master has: none of its own.
      const masterPos = gtids(await gtidVariable(admin, 'MySQL002B', 'gtid_binlog_pos'));
      assert.ok(await gtidWait(admin, 'MySQL002A', await gtidVariable(admin, 'MySQL002B', 'gtid_binlog_pos'), 30_000), 'the slave applies its master\'s binlog');
      const slavePos = gtids(await gtidVariable(admin, 'MySQL002A', 'gtid_binlog_pos'));
      for (const [key, seq] of slavePos) {
        assert.ok((masterPos.get(key) ?? -1) >= seq, `the slave MySQL002A binlogged ${key}-${seq}, which its master MySQL002B has not (master at ${[...masterPos].map(([k, n]) => `${k}-${n}`).join(',')})`);
      }
      const [status] = await query<{ Slave_SQL_Running: string; Last_SQL_Error: string }>('MySQL002A', 'SHOW SLAVE STATUS');
      assert.equal(status?.Slave_SQL_Running, 'Yes', `MySQL002A replicates: ${status?.Last_SQL_Error}`);
      // The pair fails back, and the shards moved nowhere keep serving on both pairs.
      await plannedFailover(fleet, 'MySQL002B', { holdMs: 30_000 });
      const back = await kit.objects.create('pin', { back: true }, { shard: 4 });
      assert.equal((await kit.objects.get(back.id))?.data.back, true);
      await kit.objects.create('pin', { after: true }, { shard: 0 });
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
    const hosts = Object.fromEntries(Object.entries(config.hosts).map(([name, h]) => [name, { host: h.host!, port: h.port! }]));
    const storage = { user: config.storage.user, ...(config.storage.password !== undefined ? { password: config.storage.password } : {}) };
    const engine = createMariadbMoveEngine({ hosts, ...storage, tables: fleetTables(resolveSchema(config), 'objects'), admin: moveAdmin(admin) });
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
});
