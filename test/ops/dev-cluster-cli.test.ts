import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { DevCluster } from '../../src/ops/dev-cluster.js';
import { listeningAddresses, mariadbClient, processAlive, shardkit } from '../mysql/helpers.js';

interface StatusRow {
  name: string;
  role: string;
  host: string;
  port: number;
  socket: string;
  pid: number | null;
  master: string | null;
  replicationLagSeconds: number | null;
}

const dir = mkdtempSync(join(tmpdir(), 'shardkit-devcli-'));

async function status(): Promise<StatusRow[]> {
  const res = await shardkit(['dev', 'status', '--dir', dir, '--json']);
  assert.equal(res.code, 0, res.stderr);
  return JSON.parse(res.stdout) as StatusRow[];
}

async function waitFor(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

describe('shardkit dev up / status / down (real mariadbd)', () => {
  let up: StatusRow[];

  before(async () => {
    const res = await shardkit(['dev', 'up', '--dir', dir, '--pairs', '1', '--shards', '4', '--json']);
    assert.equal(res.code, 0, res.stderr);
    up = JSON.parse(res.stdout) as StatusRow[];
  });

  after(async () => {
    // Whatever happened above, nothing may keep running.
    try {
      await DevCluster.open(dir)?.down();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('dev up --json lists a master and its slave with exactly the documented keys', () => {
    assert.equal(up.length, 2);
    for (const row of up) {
      assert.deepEqual(Object.keys(row), ['name', 'role', 'host', 'port', 'socket', 'pid', 'master', 'replicationLagSeconds']);
      assert.equal(row.host, '127.0.0.1');
      assert.ok(Number.isInteger(row.pid) && processAlive(row.pid!));
      assert.ok(existsSync(row.socket));
    }
    const [master, slave] = up;
    assert.deepEqual([master!.name, master!.role, master!.master], ['MySQL001A', 'master', null]);
    assert.deepEqual([slave!.name, slave!.role, slave!.master], ['MySQL001B', 'slave', 'MySQL001A']);
    assert.notEqual(master!.port, slave!.port);
  });

  test('servers listen on 127.0.0.1 only, have unique server ids, and let root in over the socket without a password', () => {
    const ids = new Set<string>();
    for (const row of up) {
      assert.deepEqual(listeningAddresses(row.port), ['127.0.0.1'], `${row.name} listens beyond 127.0.0.1`);
      const [[bind, serverId, user]] = mariadbClient(row.socket, 'SELECT @@bind_address, @@server_id, CURRENT_USER()') as [[string, string, string]];
      assert.equal(bind, '127.0.0.1');
      assert.match(user, /@localhost$/);
      ids.add(serverId);
      assert.deepEqual(mariadbClient(row.socket, "SELECT COUNT(*) FROM mysql.user WHERE User = ''"), [['0']], 'anonymous users are dropped');
    }
    assert.equal(ids.size, 2);
  });

  test('shardkit.json points at the masters and init created every shard (objects and mod shards)', async () => {
    const config = JSON.parse(readFileSync(join(dir, 'shardkit.json'), 'utf8')) as { storage: { backend: string }; hosts: Record<string, { host: string; port: number }>; shardMap: { ranges: Array<{ master: string; slave: string }> } };
    assert.equal(config.storage.backend, 'mysql');
    assert.deepEqual(config.hosts.MySQL001A, { host: '127.0.0.1', port: up[0]!.port });
    assert.deepEqual(config.shardMap.ranges.map((r) => [r.master, r.slave]), [['MySQL001A', 'MySQL001B']]);
    const dbs = mariadbClient(up[0]!.socket, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'db%' ORDER BY 1").map((r) => r[0]);
    assert.deepEqual(dbs, ['db00000', 'db00001', 'db00002', 'db00003']);
    const tables = mariadbClient(up[0]!.socket, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db00002' ORDER BY 1").map((r) => r[0]);
    assert.ok(tables.includes('pins') && tables.includes('board_has_pins') && tables.includes('lookup_email'), tables.join(','));
    // A second init changes nothing.
    const again = await shardkit(['init', '--config', join(dir, 'shardkit.json'), '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.deepEqual((JSON.parse(again.stdout) as { total: number; created: number }).created, 0);
    // Not a TTY: progress is JSON lines on stderr, ending with the finished line.
    const progress = again.stderr.trim().split('\n').map((l) => JSON.parse(l) as { op: string; done: number; total: number; msg: string });
    assert.ok(progress.every((p) => p.op === 'init' && p.total === 8));
    assert.deepEqual([progress.at(-1)!.msg, progress.at(-1)!.done], ['init finished', 8]);
  });

  test('schema apply adds the table of a new type to every shard, on master and slave', async () => {
    const path = join(dir, 'shardkit.json');
    const config = JSON.parse(readFileSync(path, 'utf8')) as { schema: { types: Array<{ name: string; id: number }> } };
    config.schema.types.push({ name: 'photo', id: 9 });
    writeFileSync(path, JSON.stringify(config, null, 2));
    const res = await shardkit(['schema', 'apply', '--config', path, '--json']);
    assert.equal(res.code, 0, res.stderr);
    assert.equal((JSON.parse(res.stdout) as { created: number }).created, 4);
    const count = "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_NAME = 'photos' AND TABLE_SCHEMA LIKE 'db%'";
    assert.deepEqual(mariadbClient(up[0]!.socket, count), [['4']]);
    await waitFor('the slave to get the new tables', () => mariadbClient(up[1]!.socket, count)[0]![0] === '4');
  });

  test('kill -9 of the master: status shows it down; dev up restarts only it and keeps the data', async () => {
    const [master, slave] = up;
    mariadbClient(master!.socket, "INSERT INTO db00001.pins (data) VALUES ('{\"before\":\"crash\"}')");
    process.kill(master!.pid!, 'SIGKILL');
    await waitFor('the master to die', () => !processAlive(master!.pid!));
    const down = await status();
    assert.equal(down[0]!.pid, null);
    assert.equal(down[1]!.pid, slave!.pid);

    const text = await shardkit(['dev', 'status', '--dir', dir]);
    assert.equal(text.code, 0);
    assert.match(text.stdout, /^NAME\s+ROLE\s+HOST\s+PORT\s+PID\s+MASTER\s+LAG\s+REPLICATION/);
    assert.match(text.stdout, /MySQL001A\s+master\s+127\.0\.0\.1\s+\d+\s+down/);

    const again = await shardkit(['dev', 'up', '--dir', dir]);
    assert.equal(again.code, 0, again.stderr);
    assert.match(again.stdout, /restarted MySQL001A/);
    const after = await status();
    assert.ok(after[0]!.pid !== null && after[0]!.pid !== master!.pid);
    assert.equal(after[0]!.port, master!.port, 'the restarted server keeps its port');
    assert.equal(after[1]!.pid, slave!.pid, 'the running slave was left alone');
    assert.deepEqual(mariadbClient(after[0]!.socket, 'SELECT data FROM db00001.pins'), [['{"before":"crash"}']]);
    // Replication resumes by itself (GTID, slave_pos) and the slave has the row.
    await waitFor('the slave to replicate the row', () => mariadbClient(after[1]!.socket, 'SELECT COUNT(*) FROM db00001.pins')[0]![0] === '1');
    await waitFor('replication to report its lag', async () => (await status())[1]!.replicationLagSeconds !== null);
  });

  test('dev up on an existing dir refuses other sizes with exit 2 and one line', async () => {
    const res = await shardkit(['dev', 'up', '--dir', dir, '--pairs', '3']);
    assert.equal(res.code, 2);
    assert.equal(res.stderr.trim().split('\n').length, 1);
    assert.match(res.stderr, /INVALID_ARGUMENT: the cluster in .* has 1 pairs, not 3/);
  });

  test('dev down stops every server and leaves nothing running', async () => {
    const before = await status();
    const res = await shardkit(['dev', 'down', '--dir', dir]);
    assert.equal(res.code, 0, res.stderr);
    for (const row of before) assert.equal(processAlive(row.pid!), false, `${row.name} still runs`);
    assert.deepEqual((await status()).map((r) => r.pid), [null, null]);
    const twice = await shardkit(['dev', 'down', '--dir', dir]);
    assert.equal(twice.code, 0);
    assert.match(twice.stdout, /nothing was running/);
  });
});

test('without mariadbd, dev up names the Debian package in one line and exits non-zero', async () => {
  const d = mkdtempSync(join(tmpdir(), 'shardkit-nomaria-'));
  try {
    const res = await shardkit(['dev', 'up', '--dir', join(d, 'c')], { MARIADBD: join(d, 'no-such-mariadbd') });
    assert.notEqual(res.code, 0);
    assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
    assert.match(res.stderr, /mariadbd not found: install the Debian package mariadb-server/);
    assert.equal(existsSync(join(d, 'c')), false, 'nothing was created');
  } finally {
    rmSync(d, { recursive: true, force: true });
  }
});
