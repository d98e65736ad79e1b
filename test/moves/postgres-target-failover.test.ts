/**
 * The target pair of a PostgreSQL move fails over (planned) while the move copies: the move can
 * never switch there (refuseTurnedTarget), so it aborts, and its abort cleans the copy on the
 * target pair's new master. Before, the target's part of the abort ran on the recorded target
 * master, now a standby: "cannot execute DROP TABLE in a read-only transaction", the record stayed
 * 'aborting' and every --abort failed until the pair failed back (the PostgreSQL failover review).
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { resolveSchema } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { devClusterDown, devUp, DevCluster } from '../../src/ops/dev-cluster.js';
import { pgServer } from '../../src/ops/dev/dev-postgres.js';
import { pgPlannedFailover } from '../../src/ops/failover/index.js';
import { runMove } from '../../src/moves/move-runner.js';
import { createPostgresMoveEngine, POSTGRES_MOVE_MAX_LAG_BYTES } from '../../src/moves/postgres/index.js';
import { postgresDialect } from '../../src/storage/postgres/postgres-dialect.js';
import { createTopologyStore } from '../../src/topology/index.js';
import { isShardKitError } from '../../src/errors.js';

describe('a PostgreSQL move whose target pair fails over during the copy (real PostgreSQL 15)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pgtarget-'));
  let c: DevCluster;
  before(async () => {
    await devUp({ dir, engine: 'postgres', pairs: 2, shards: 4, modShards: 4 });
    c = DevCluster.require(dir);
  });
  after(async () => {
    try {
      const cluster = DevCluster.open(dir);
      if (cluster) await devClusterDown(cluster);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the move aborts, its copy is dropped on the target pair\'s new master, nothing is left recorded, and the range serves on its source', async () => {
    const config = c.config();
    if (config.storage.backend !== 'postgres') throw new Error('not a postgres config');
    const schema = resolveSchema(config);
    const kit = await ShardKit.open({ configPath: join(dir, 'shardkit.json'), dataDir: dir });
    const store = createTopologyStore(config.topologyStore, { dataDir: dir });
    const engine = createPostgresMoveEngine({ hosts: config.hosts, user: config.storage.user, database: config.storage.database, schema });
    const sql = <T extends Record<string, unknown>>(host: string, text: string) => pgServer(c, host).sql<T>(text, [], 'shardkit');
    // Shard 0's pins on the target held in SHARE mode: the copy's COPY into it waits there.
    for (const q of postgresDialect.createShard(schema, { host: 'PG002A', shard: 0, fleet: 'objects' })) await sql('PG002A', q);
    const address = config.hosts.PG002A!;
    const holder = new pg.Client({ host: address.socket ?? address.host, port: address.port, user: config.storage.user, database: config.storage.database });
    holder.on('error', () => undefined); // ended by the failover's stop
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE db00000.pins IN SHARE MODE');
    try {
      for (let i = 0; i < 5; i++) await kit.objects.create('pin', { i }, { shard: i % 2 });
      let copying!: () => void;
      const inCopy = new Promise<void>((resolve) => (copying = resolve));
      const mover = runMove({
        store, engine, hosts: Object.keys(config.hosts), maxLag: POSTGRES_MOVE_MAX_LAG_BYTES,
        start: { span: { first: 0, last: 1 }, target: { master: 'PG002A', slave: 'PG002B' }, holdMs: 30_000 },
        onProgress: () => copying(),
      }).then((r) => r, (err: unknown) => err);
      await inCopy;
      await pgPlannedFailover(c, 'PG002A');
      const outcome = await mover;
      assert.ok(!isShardKitError(outcome, 'MOVE_ABORT_FAILED'), `the mover's own abort cleaned up: ${String(outcome)}`);
      const map = (await store.read())!;
      assert.deepEqual(map.moves(), [], 'no move left recorded');
      assert.equal(map.locate(0).master, 'PG001A');
      for (const s of ['db00000', 'db00001']) {
        const left = await sql<{ n: number }>('PG002B', `SELECT count(*)::int AS n FROM pg_tables WHERE schemaname = '${s}'`);
        assert.equal(left[0]!.n, 0, `no copy of ${s} on the target pair's new master`);
      }
      // The range serves on its source.
      await kit.objects.create('pin', { after: true }, { shard: 0 });
    } finally {
      await holder.end().catch(() => undefined);
      await engine.close();
      await store.close();
      await kit.close();
    }
  });
});
