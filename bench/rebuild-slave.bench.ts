/**
 * `pair rebuild-slave` at size, against the raw tool in the same run: a dev cluster of one pair
 * (64 shards), ROWS pins of ~300 bytes on the master (made by the server, replicated), then
 *   1. by hand, as an operator rebuilds a slave: STOP SLAVE, the user databases dropped on the
 *      slave (binlog off), `mariadb-dump --single-transaction --gtid --master-data=2 | mariadb`
 *      from the master into the slave, replication pointed at the dump's position and awaited;
 *   2. `rebuildSlave` of the same slave (src/ops/failover/rebuild-slave.ts): the same steps, the
 *      copy done by the move's text copy (one session, no lock), the map written at the end.
 * Both are timed from the first statement to the slave caught up; the rows are compared after
 * each (count and CHECKSUM TABLE of every pins table on both servers).
 *
 *   ROWS=1000000 node --import tsx bench/rebuild-slave.bench.ts
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { devClusterDown, devUp, DevCluster } from '../src/ops/dev-cluster.js';
import { openFleet } from '../src/ops/failover/failover-context.js';
import { devHostAdmin } from '../src/ops/failover/host-admin.js';
import { rebuildSlave } from '../src/ops/failover/rebuild-slave.js';

const SHARDS = 64;
const ROWS = Number(process.env.ROWS ?? 1_000_000);
const MASTER = 'MySQL001A';
const SLAVE = 'MySQL001B';
const db = (s: number) => `db${String(s).padStart(5, '0')}`;

function rawPipe(dumpArgs: string[], loadArgs: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const dump = spawn('mariadb-dump', dumpArgs, { stdio: ['ignore', 'pipe', 'inherit'] });
    const load = spawn('mariadb', loadArgs, { stdio: ['pipe', 'ignore', 'inherit'] });
    // The position is at the dump's end (--gtid --master-data=2 writes it there, as a comment).
    let tail = '';
    dump.stdout.on('data', (b: Buffer) => {
      tail = (tail + b.toString('latin1')).slice(-8192);
    });
    dump.stdout.pipe(load.stdin);
    let left = 2;
    const exited = (what: string) => (code: number | null) => {
      if (code !== 0) reject(new Error(`${what} exited ${code}`));
      else if (--left === 0) {
        const m = /gtid_slave_pos\s*=\s*'([^']*)'/.exec(tail);
        if (m === null) reject(new Error('the dump wrote no gtid_slave_pos'));
        else resolve(m[1]!);
      }
    };
    dump.on('close', exited('mariadb-dump'));
    load.on('close', exited('mariadb'));
  });
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-rebuild-'));
  let cluster: DevCluster | undefined;
  try {
    cluster = (await devUp({ dir, pairs: 1, shards: SHARDS })).cluster;
    const admin = devHostAdmin(cluster);
    const dbs = Array.from({ length: SHARDS }, (_, i) => db(i));
    const per = Math.ceil(ROWS / dbs.length);
    const m = await admin.connect(MASTER);
    let s = await admin.connect(SLAVE);
    const t0 = performance.now();
    for (const d of dbs) await m.query(`INSERT INTO \`${d}\`.pins (data) SELECT CONCAT('{"i":', seq, ',"pad":"', REPEAT('x', 260), '"}') FROM \`${d}\`.seq_1_to_${per}`);
    const caughtUp = async () => {
      const [[pos]] = await m.query('SELECT @@GLOBAL.gtid_binlog_pos AS p') as unknown as [[{ p: string }]];
      const [[w]] = await s.query('SELECT MASTER_GTID_WAIT(?, 1800) AS w', [pos.p]) as unknown as [[{ w: number }]];
      if (Number(w.w) !== 0) throw new Error(`${SLAVE} did not reach ${pos.p}`);
    };
    await caughtUp();
    const [[sz]] = await m.query(`SELECT SUM(DATA_LENGTH) AS b FROM information_schema.TABLES WHERE TABLE_SCHEMA LIKE 'db%'`) as unknown as [[{ b: string }]];
    const mb = Number(sz.b) / 1e6;
    console.error(`filled ${per * dbs.length} rows (${mb.toFixed(0)} MB) in ${Math.round(performance.now() - t0)} ms, replicated`);
    const same = async (what: string) => {
      const list = dbs.map((d) => `\`${d}\`.pins`).join(', ');
      const [a] = await m.query(`CHECKSUM TABLE ${list}`);
      const [b] = await s.query(`CHECKSUM TABLE ${list}`);
      const sum = (rows: unknown) => (rows as Array<{ Checksum: string }>).map((r) => r.Checksum).join(',');
      if (sum(a) !== sum(b)) throw new Error(`${what}: the slave's pins differ from the master's`);
    };

    // 1. By hand.
    const userDbs = async () => ((await m.query("SELECT SCHEMA_NAME AS d FROM information_schema.SCHEMATA WHERE SCHEMA_NAME NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')"))[0] as Array<{ d: string }>).map((r) => r.d);
    const all = await userDbs();
    const r0 = performance.now();
    await s.query('STOP SLAVE');
    await s.query('SET SESSION sql_log_bin = 0');
    for (const d of all) await s.query(`DROP DATABASE \`${d}\``);
    await s.query('RESET MASTER');
    const position = await rawPipe([...admin.clientArgs(MASTER), '--single-transaction', '--gtid', '--master-data=2', '--triggers', '--routines', '--events', '--hex-blob', '--databases', ...all], [...admin.clientArgs(SLAVE), '--init-command=SET SESSION sql_log_bin = 0']);
    await s.query('SET GLOBAL gtid_slave_pos = ?', [position]);
    await s.query("CHANGE MASTER TO master_use_gtid = slave_pos");
    await s.query('START SLAVE');
    await caughtUp();
    const rawMs = performance.now() - r0;
    await same('by hand');

    // 2. rebuild-slave.
    const fleet = openFleet({ dir });
    const b0 = performance.now();
    const r = await rebuildSlave(fleet, MASTER).finally(() => fleet.close());
    // rebuild-slave ended every client session on the slave (it fences a host that may have been a master).
    s.destroy();
    s = await admin.connect(SLAVE);
    await caughtUp();
    const ourMs = performance.now() - b0;
    await same('rebuild-slave');
    await m.end();
    await s.end();

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
