import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigFile, TicketClient } from '../../src/index.js';
import { DevCluster, devUp } from '../../src/ops/dev-cluster.js';
import { parity } from './ticket-cluster.js';

const dir = mkdtempSync(join(tmpdir(), 'sk-devtk-'));

after(async () => {
  try {
    await DevCluster.open(dir)?.down();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const cli = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8', timeout: 180_000, env: { ...process.env, NODE_OPTIONS: '' } });

test('dev up --ticket-servers 2: role ticket in dev status --json, residues split, sequences in D/shardkit.json, restarted by a later dev up', { timeout: 240_000 }, async () => {
  const up = cli('dev', 'up', '--dir', dir, '--pairs', '1', '--shards', '2', '--no-init', '--ticket-servers', '2', '--json');
  assert.equal(up.status, 0, up.stderr);
  const rows = JSON.parse(up.stdout) as Array<{ name: string; role: string; pid: number | null; master: string | null }>;
  const tickets = rows.filter((r) => r.role === 'ticket');
  assert.deepEqual(tickets.map((r) => [r.name, r.master]), [['ticket1', null], ['ticket2', null]]);
  assert.ok(tickets.every((r) => r.pid !== null));

  const cluster = DevCluster.require(dir);
  for (const [i, name] of ['ticket1', 'ticket2'].entries()) {
    const [v] = await cluster.instance(name).admin<Array<{ inc: unknown; off: unknown }>>('SELECT @@auto_increment_increment AS inc, @@auto_increment_offset AS off');
    assert.deepEqual([Number(v!.inc), Number(v!.off)], [2, i + 1]);
  }
  const config = loadConfigFile(join(dir, 'shardkit.json'));
  assert.deepEqual(config.tickets?.sequences, ['photos', 'accounts', 'offline_tasks', 'groups']);
  assert.deepEqual(config.tickets?.servers.map((s) => [s.name, s.offset]), [['ticket1', 1], ['ticket2', 2]]);
  assert.deepEqual(Object.keys(config.hosts).sort(), ['MySQL001A', 'MySQL001B'], 'ticket servers are not shard hosts');

  const client = new TicketClient(config.tickets!, { mode: 'classic' });
  try {
    const seen = new Set<bigint>();
    const take = async (n: number) => {
      const got: bigint[] = [];
      for (let i = 0; i < n; i++) got.push(await client.next('offline_tasks'));
      for (const id of got) {
        assert.ok(!seen.has(id), `duplicate ${id}`);
        seen.add(id);
      }
      return got;
    };
    const first = await take(20);
    assert.ok(first.some((id) => parity(id) === 'odd') && first.some((id) => parity(id) === 'even'));

    // kill -9 a ticket server; a plain `dev up --dir D` (no flag) starts it again, keeping its counter.
    await cluster.instance('ticket2').kill();
    const during = await take(20);
    assert.ok(during.every((id) => parity(id) === 'odd'));
    const again = await devUp({ dir, skipInit: true });
    assert.deepEqual(again.started, ['ticket2']);
    const later: bigint[] = [];
    for (let i = 0; i < 10_000 && !later.some((id) => parity(id) === 'even'); i++) later.push(...(await take(1)));
    const maxEvenBefore = first.filter((id) => parity(id) === 'even').reduce((a, b) => (b > a ? b : a), 0n);
    assert.ok(later.filter((id) => parity(id) === 'even').every((id) => id > maxEvenBefore), 'the restarted server continues above its old IDs');
  } finally {
    await client.close();
  }

  const next = cli('tickets', 'next', 'groups', '--count', '3', '--config', join(dir, 'shardkit.json'));
  assert.equal(next.status, 0, next.stderr);
  assert.equal(next.stdout.trim().split('\n').length, 3);

  const changeN = cli('dev', 'up', '--dir', dir, '--no-init', '--ticket-servers', '3');
  assert.equal(changeN.status, 2);
  assert.match(changeN.stderr, /has 2 ticket servers, not 3/);
  assert.match(readFileSync(join(dir, 'shardkit.json'), 'utf8'), /"ticket2"/);
});
