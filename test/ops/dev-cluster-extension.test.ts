import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DevCluster, devUp, type DevClusterExtension } from '../../src/ops/dev-cluster.js';
import { processAlive } from '../mysql/helpers.js';

const dir = mkdtempSync(join(tmpdir(), 'shardkit-devext-'));

after(async () => {
  try {
    await DevCluster.open(dir)?.down();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

// The hook other kinds of dev servers use (ticket servers): own role and settings, started,
// restarted and stopped with the pairs, listed by status, and a section in shardkit.json.
test('an extension adds servers with their own role and settings, a config section and an afterStart step', async () => {
  let afterStartCalls = 0;
  const ext: DevClusterExtension = {
    name: 'fake-tickets',
    servers: () => [1, 2].map((i) => ({ name: `T${i}`, role: 'ticket', settings: { auto_increment_increment: 2, auto_increment_offset: i } })),
    afterStart: async (cluster) => {
      afterStartCalls++;
      for (const s of cluster.serversWithRole('ticket')) await cluster.instance(s.name).admin('CREATE DATABASE IF NOT EXISTS tickets');
    },
    configure: (config, cluster) => {
      config.tickets = { servers: cluster.serversWithRole('ticket').map((s) => ({ name: s.name, port: cluster.instance(s.name).port })), sequences: ['photos'] };
    },
  };
  const first = await devUp({ dir, pairs: 1, shards: 2, skipInit: true, extensions: [ext] });
  assert.deepEqual(first.started.sort(), ['MySQL001A', 'MySQL001B', 'T1', 'T2']);
  const rows = await first.cluster.status();
  assert.deepEqual(rows.map((r) => [r.name, r.role, r.master]), [['MySQL001A', 'master', null], ['MySQL001B', 'slave', 'MySQL001A'], ['T1', 'ticket', null], ['T2', 'ticket', null]]);
  const t2 = first.cluster.instance('T2');
  const [vars] = await t2.admin<Array<{ inc: number; off: number }>>('SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off');
  assert.deepEqual([Number(vars!.inc), Number(vars!.off)], [2, 2]);
  const ids = new Set(rows.map((r) => r.port));
  assert.equal(ids.size, 4, 'every server has its own port');
  const config = JSON.parse(readFileSync(join(dir, 'shardkit.json'), 'utf8')) as { tickets: { servers: Array<{ name: string; port: number }> }; hosts: Record<string, unknown> };
  assert.deepEqual(config.tickets.servers.map((s) => s.name), ['T1', 'T2']);
  assert.deepEqual(Object.keys(config.hosts).sort(), ['MySQL001A', 'MySQL001B'], 'extension servers are not shard hosts');
  assert.equal(afterStartCalls, 1);

  // A crash of an extension server is repaired by the next dev up, like the pairs.
  const pid = t2.pid!;
  await t2.kill();
  assert.equal(processAlive(pid), false);
  const again = await devUp({ dir, skipInit: true, extensions: [ext] });
  assert.deepEqual(again.started, ['T2']);
  assert.equal(afterStartCalls, 2);
  assert.deepEqual(await again.cluster.instance('T2').admin("SHOW DATABASES LIKE 'tickets'"), [{ 'Database (tickets)': 'tickets' }]);

  // Even without the extension, the servers it added are part of the cluster from now on.
  const stopped = await DevCluster.require(dir).down();
  assert.deepEqual(stopped.sort(), ['MySQL001A', 'MySQL001B', 'T1', 'T2']);
});
