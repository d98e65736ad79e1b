import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { DevCluster } from '../../src/ops/dev-cluster.js';
import { startTestCluster } from './cluster-fixture.js';
import { mariadbClient, processAlive, shardkit } from './helpers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** `shardkit serve --config D/shardkit.json` as a real process on a free port. */
async function startServe(dir: string): Promise<{ url: string; proc: ChildProcess; stop(): Promise<void> }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', '--config', join(dir, 'shardkit.json'), '--data', dir, '--port', '0', '--no-widecolumn', '--log-level', 'info'], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`serve did not start: ${err || out}`)), 60_000);
    proc.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    });
    proc.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${err}`));
    });
  });
  const stop = async () => {
    if (proc.exitCode !== null || proc.pid === undefined) return;
    proc.kill('SIGTERM');
    await new Promise((r) => proc.once('exit', r));
  };
  return { url, proc, stop };
}

describe('shardkit serve on a real MariaDB cluster', () => {
  let cluster: DevCluster;
  let dir: string;
  let stopCluster: () => Promise<void>;
  let server: Awaited<ReturnType<typeof startServe>> | undefined;

  before(async () => {
    ({ cluster, dir, stop: stopCluster } = await startTestCluster({ pairs: 2, shards: 8, prefix: 'shardkit-api-' }));
    server = await startServe(dir);
  });

  after(async () => {
    await server?.stop();
    await stopCluster?.();
  });

  const http = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(`${server!.url}${path}`, {
      method,
      ...(body !== undefined ? { body: JSON.stringify(body), headers: { 'content-type': 'application/json' } } : {}),
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };

  test('a row written through the API is at db<shard>.<table> on the master the map names, and on its slave after replication', async () => {
    const created = await http('POST', '/v1/objects/pin', { data: { details: "it's here", n: 7 }, shard: 6 });
    assert.equal(created.status, 201);
    const id = BigInt(created.body.id as string);
    const { shard, localId, type } = pinterestId.decode(id);
    assert.deepEqual([shard, type], [6, 1]);
    const config = cluster.config();
    const range = config.shardMap.ranges.find((r) => r.range[0] <= shard && shard <= r.range[1])!;
    assert.deepEqual([range.master, range.slave], ['MySQL002A', 'MySQL002B']);
    const sql = `SELECT data FROM db00006.pins WHERE local_id = ${localId}`;
    const [[onMaster]] = mariadbClient(cluster.instance(range.master).socket, sql) as [[string]];
    assert.deepEqual(JSON.parse(onMaster), { details: "it's here", n: 7 });
    await cluster.waitForReplication();
    assert.deepEqual(mariadbClient(cluster.instance(range.slave!).socket, sql), [[onMaster]]);
    // The other pair does not even have that shard's object tables.
    assert.deepEqual(mariadbClient(cluster.instance('MySQL001A').socket, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'db00006' AND TABLE_NAME = 'pins'"), [['0']]);
    assert.equal((await http('GET', `/v1/objects/${id}`)).status, 200);
  });

  test('kill -9 of a master: its shards answer 503 SHARD_UNAVAILABLE naming the shard, others 200; after dev up the same service recovers', async () => {
    const onA = await http('POST', '/v1/objects/board', { data: { name: 'a' }, shard: 2 });
    const onB = await http('POST', '/v1/objects/board', { data: { name: 'b' }, shard: 5 });
    assert.equal(onA.status, 201);
    assert.equal(onB.status, 201);
    const pid = cluster.instance('MySQL001A').pid!;
    process.kill(pid, 'SIGKILL');
    while (processAlive(pid)) await sleep(10);

    const dead = await http('GET', `/v1/objects/${onA.body.id as string}`);
    assert.equal(dead.status, 503);
    const error = dead.body.error as { code: string; message: string };
    assert.equal(error.code, 'SHARD_UNAVAILABLE');
    assert.match(error.message, /shard 2 \(db00002 on MySQL001A\)/);
    const write = await http('POST', '/v1/objects/pin', { data: {}, shard: 1 });
    assert.equal(write.status, 503);
    assert.equal((await http('GET', `/v1/objects/${onB.body.id as string}`)).status, 200);
    assert.equal((await http('POST', '/v1/objects/pin', { data: {}, shard: 4 })).status, 201);

    const up = await shardkit(['dev', 'up', '--dir', dir]);
    assert.equal(up.code, 0, up.stderr);
    const deadline = Date.now() + 30_000;
    for (;;) {
      const res = await http('GET', `/v1/objects/${onA.body.id as string}`);
      if (res.status === 200) {
        assert.deepEqual((res.body as { data: unknown }).data, { name: 'a' });
        break;
      }
      assert.equal(res.status, 503);
      if (Date.now() > deadline) assert.fail('the service did not recover within 30 s of the restart');
      await sleep(100);
    }
    assert.equal((await http('POST', '/v1/objects/pin', { data: {}, shard: 1 })).status, 201);
    assert.ok(processAlive(server!.proc.pid!), 'the service was not restarted');
  });
});
