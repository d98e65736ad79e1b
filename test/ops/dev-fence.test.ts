import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import mysql from 'mysql2/promise';
import type { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from '../mysql/cluster-fixture.js';
import { shardkit } from '../mysql/helpers.js';

/** A connection as the services' own user (the config's storage user), over TCP like a service. */
async function asApp(cluster: DevCluster, server: string): Promise<mysql.Connection> {
  return mysql.createConnection({ host: '127.0.0.1', port: cluster.instance(server).port, user: cluster.state.appUser, password: cluster.state.appPassword });
}

async function variable(cluster: DevCluster, server: string, name: string): Promise<string> {
  const rows = await cluster.instance(server).admin<Array<{ Value: string }>>({ sql: 'SHOW GLOBAL VARIABLES WHERE Variable_name = ?', values: [name] });
  return String(rows[0]?.Value);
}

describe('dev cluster fences: read-only masters, the app user, gtid domains, semi-sync, add-pair (real mariadbd)', () => {
  let fx: Awaited<ReturnType<typeof startTestCluster>>;
  before(async () => {
    fx = await startTestCluster({ pairs: 1, shards: 2, modShards: 2, semiSync: true, prefix: 'shardkit-fence-' });
  });
  after(async () => fx?.stop());

  test('the master the map names is writable, its slave is read-only; each pair member has its pair as gtid_domain_id', async () => {
    assert.equal(await variable(fx.cluster, 'MySQL001A', 'read_only'), 'OFF');
    assert.equal(await variable(fx.cluster, 'MySQL001B', 'read_only'), 'ON');
    assert.equal(await variable(fx.cluster, 'MySQL001A', 'gtid_domain_id'), '1');
    assert.equal(await variable(fx.cluster, 'MySQL001B', 'gtid_domain_id'), '1');
  });

  test('read_only fences the services: a write through the app user is refused on a read-only master, and the user has no SUPER / READ ONLY ADMIN', async () => {
    const conn = await asApp(fx.cluster, 'MySQL001A');
    try {
      const [grants] = await conn.query('SHOW GRANTS');
      const text = JSON.stringify(grants);
      assert.doesNotMatch(text, /ALL PRIVILEGES|SUPER|READ ONLY ADMIN/, text);
      await conn.query("INSERT INTO db00000.pins (data) VALUES ('{\"ok\":1}')");
      await fx.cluster.instance('MySQL001A').admin('SET GLOBAL read_only = 1');
      await assert.rejects(conn.query("INSERT INTO db00000.pins (data) VALUES ('{\"fenced\":1}')"), (err: { code?: string }) => err.code === 'ER_OPTION_PREVENTS_STATEMENT');
      // dev up makes the map's master writable again (it is still named master).
      const { devUp } = await import('../../src/ops/dev-cluster.js');
      await devUp({ dir: fx.dir, skipInit: true });
      await conn.query("INSERT INTO db00000.pins (data) VALUES ('{\"again\":1}')");
    } finally {
      await conn.end();
    }
  });

  test('--semi-sync: the master waits for its slave (AFTER_SYNC) and commits semi-synchronously', async () => {
    assert.equal(await variable(fx.cluster, 'MySQL001A', 'rpl_semi_sync_master_wait_point'), 'AFTER_SYNC');
    const conn = await asApp(fx.cluster, 'MySQL001A');
    try {
      await conn.query("INSERT INTO db00001.pins (data) VALUES ('{\"semi\":1}')");
    } finally {
      await conn.end();
    }
    const rows = await fx.cluster.instance('MySQL001A').admin<Array<{ Value: string }>>("SHOW GLOBAL STATUS WHERE Variable_name IN ('Rpl_semi_sync_master_status', 'Rpl_semi_sync_master_yes_tx')");
    const [status, yes] = rows.map((r) => r.Value);
    assert.equal(status, 'ON');
    assert.ok(Number(yes) > 0, `yes_tx ${yes}`);
  });

  test('dev add-pair starts an empty replicating pair, adds it to the hosts (not the map) and prints its names; its master stays read-only', async () => {
    const res = await shardkit(['dev', 'add-pair', '--dir', fx.dir, '--json']);
    assert.equal(res.code, 0, res.stderr);
    assert.deepEqual(JSON.parse(res.stdout), { pair: 2, master: 'MySQL002A', slave: 'MySQL002B' });
    const config = JSON.parse(readFileSync(fx.cluster.configPath, 'utf8')) as { hosts: Record<string, { port: number }>; shardMap: unknown };
    const { DevCluster } = await import('../../src/ops/dev-cluster.js');
    const c = DevCluster.require(fx.dir);
    assert.equal(config.hosts.MySQL002A!.port, c.instance('MySQL002A').port);
    assert.doesNotMatch(JSON.stringify(config.shardMap), /MySQL002/);
    assert.equal(await variable(c, 'MySQL002A', 'read_only'), 'ON');
    assert.equal(await variable(c, 'MySQL002A', 'gtid_domain_id'), '2');
    const st = await c.status();
    assert.equal(st.find((r) => r.name === 'MySQL002B')!.replication, 'running');
    assert.equal(st.length, 4);
  });
  test('pair members start with skip-slave-start (a move connection must not start unfiltered with the server): a killed slave replicates again after dev up; a cluster made before gets the option', async () => {
    const { DevCluster, devUp } = await import('../../src/ops/dev-cluster.js');
    const c = DevCluster.require(fx.dir);
    for (const name of ['MySQL001A', 'MySQL001B']) assert.match(readFileSync(c.instance(name).configFile, 'utf8'), /^skip-slave-start$/m, `${name}'s my.cnf`);
    // The slave's own connection is started by dev up, not by the server.
    await c.instance('MySQL001B').kill();
    await devUp({ dir: fx.dir, skipInit: true });
    const st = await DevCluster.require(fx.dir).status();
    assert.equal(st.find((r) => r.name === 'MySQL001B')!.replication, 'running');
    // A member recorded without the option (an older cluster) gets it at the next dev up.
    const specFile = `${c.instance('MySQL001B').dir}/instance.json`;
    const spec = JSON.parse(readFileSync(specFile, 'utf8')) as { settings: Record<string, unknown> };
    delete spec.settings['skip-slave-start'];
    writeFileSync(specFile, JSON.stringify(spec));
    await devUp({ dir: fx.dir, skipInit: true });
    assert.equal((JSON.parse(readFileSync(specFile, 'utf8')) as { settings: Record<string, unknown> }).settings['skip-slave-start'], true);
    assert.match(readFileSync(c.instance('MySQL001B').configFile, 'utf8'), /^skip-slave-start$/m);
  });
});
