/**
 * `pair rebuild-slave` at size, against the raw tool in the same run: a dev cluster of one pair
 * (64 shards), ROWS pins of ~300 bytes on the master (made by the server, replicated), then
 *   1. by hand, as an operator rebuilds a slave: STOP SLAVE, the user databases dropped on the
 *      slave (binlog off), `mariadb-dump --single-transaction --gtid --master-data=2 | mariadb`
 *      from the master into the slave, replication pointed at the dump's position and awaited;
 *   2. `rebuildSlave` of the same slave (src/ops/failover/rebuild-slave.ts): the same steps, the
 *      copy done by the move's text copy (one session, no lock), the map written at the end.
 * Both are timed from the first statement to the slave caught up; the rows are compared after
 * each (CHECKSUM TABLE of every table on both servers, as `pair verify` does).
 *
 *   ROWS=1000000 node --import tsx bench/rebuild-slave.bench.ts
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { openFleet } from '../src/ops/failover/failover-context.js';
import { adminQuery, devHostAdmin } from '../src/ops/failover/host-admin.js';
import { rebuildSlave } from '../src/ops/failover/rebuild-slave.js';
import { gtidVariable, gtidWait } from '../src/ops/failover/replica.js';
import { compareHosts, userDatabases } from '../src/ops/failover/table-checksums.js';
import { dumpPipe } from './bench-shell.js';

const SHARDS = 64;
const ROWS = Number(process.env.ROWS ?? 1_000_000);
const MASTER = 'MySQL001A';
const SLAVE = 'MySQL001B';
const db = (s: number) => `db${String(s).padStart(5, '0')}`;

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-rebuild-'));
  let cluster: DevCluster | undefined;
  try {
    cluster = (await devUp({ dir, pairs: 1, shards: SHARDS })).cluster;
    const admin = devHostAdmin(cluster);
    const dbs = Array.from({ length: SHARDS }, (_, i) => db(i));
    const per = Math.ceil(ROWS / dbs.length);
    const t0 = performance.now();
    await adminQuery(admin, MASTER, ...dbs.map((d) => `INSERT INTO \`${d}\`.pins (data) SELECT CONCAT('{"i":', seq, ',"pad":"', REPEAT('x', 260), '"}') FROM \`${d}\`.seq_1_to_${per}`));
    const caughtUp = async () => {
      const pos = await gtidVariable(admin, MASTER, 'gtid_binlog_pos');
      if (!(await gtidWait(admin, SLAVE, pos, 1_800_000))) throw new Error(`${SLAVE} did not reach ${pos}`);
    };
    await caughtUp();
    const [sz] = await adminQuery<Array<{ b: string }>>(admin, MASTER, "SELECT SUM(DATA_LENGTH) AS b FROM information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'db%'");
    const mb = Number(sz!.b) / 1e6;
    console.error(`filled ${per * dbs.length} rows (${mb.toFixed(0)} MB) in ${Math.round(performance.now() - t0)} ms, replicated`);
    const same = async (what: string) => {
      const { differing } = await compareHosts(admin, MASTER, SLAVE);
      if (differing.length > 0) throw new Error(`${what}: the slave differs from the master in ${differing.slice(0, 5).join(', ')}`);
    };

    // 1. By hand.
    const all = await userDatabases(admin, MASTER);
    const r0 = performance.now();
    await adminQuery(admin, SLAVE, 'STOP SLAVE', 'SET SESSION sql_log_bin = 0', ...all.map((d) => `DROP DATABASE \`${d}\``), 'RESET MASTER');
    const position = await dumpPipe([...admin.clientArgs(MASTER), '--single-transaction', '--gtid', '--master-data=2', '--triggers', '--routines', '--events', '--hex-blob', '--databases', ...all], [...admin.clientArgs(SLAVE), '--init-command=SET SESSION sql_log_bin = 0']);
    if (position === undefined) throw new Error('the dump wrote no gtid_slave_pos');
    await adminQuery(admin, SLAVE, { sql: 'SET GLOBAL gtid_slave_pos = ?', values: [position] }, 'CHANGE MASTER TO master_use_gtid = slave_pos', 'START SLAVE');
    await caughtUp();
    const rawMs = performance.now() - r0;
    await same('by hand');

    // 2. rebuild-slave.
    const fleet = openFleet({ dir });
    const b0 = performance.now();
    const r = await rebuildSlave(fleet, MASTER).finally(() => fleet.close());
    await caughtUp();
    const ourMs = performance.now() - b0;
    await same('rebuild-slave');
    console.log(`rebuild of a MariaDB slave: ${per * dbs.length} rows (${mb.toFixed(0)} MB) in ${SHARDS} shards, ${r.databases} databases, ${new Date().toISOString().slice(0, 16)}Z, load ${loadavg()[0]!.toFixed(1)}`);
    console.log('| measure | shardkit `pair rebuild-slave` | by hand (`mariadb-dump \\| mariadb`) | ratio (time, by hand / shardkit) |');
    console.log('| --- | ---: | ---: | ---: |');
    console.log(`| STOP SLAVE to caught up | ${(ourMs / 1000).toFixed(1)} s | ${(rawMs / 1000).toFixed(1)} s | ${(rawMs / ourMs).toFixed(2)}x |`);
  } finally {
    const c = DevCluster.open(dir);
    if (c) await devClusterDown(c).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
