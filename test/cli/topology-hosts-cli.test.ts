/**
 * `shardkit topology hosts add|list|remove` (#28: hosts are topology): what an operator types to
 * tell running services about a pair on other machines. Bad input is one readable line and
 * changes nothing; a host the live map still names cannot be removed.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, FileTopologyStore, ShardMap } from '../../src/index.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';
import { openShardTarget } from '../../src/ops/shard-target.js';

let dir: string;
let cfg: string;
before(async () => {
  ensureBuilt();
  dir = await mkdtemp(join(tmpdir(), 'shardkit-topo-hosts-'));
  cfg = join(dir, 'shardkit.json');
  const c = { ...defaultConfig({ shards: 8, pairs: 1 }), storage: { backend: 'mysql', user: 'app', password: 'from-config' } };
  await writeFile(cfg, JSON.stringify(c));
  const store = new FileTopologyStore({ path: join(dir, 'topology.json') });
  await store.write(ShardMap.fromJSON(c.shardMap), 0);
  await store.close();
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function stored(): Promise<string[]> {
  const store = new FileTopologyStore({ path: join(dir, 'topology.json') });
  try {
    return [...(await store.hosts.readAll()).keys()].sort();
  } finally {
    await store.close();
  }
}

test('topology hosts add, list and remove keep host records in the store; list shows no secret', async () => {
  const add = ['topology', 'hosts', 'add', 'MySQL002A', '--address', '10.0.2.1', '--port', '3306', '--role', 'master', '--engine', 'mariadb', '--file', cfg];
  let r = await cli(add);
  assert.equal(r.code, 0, r.stderr);
  r = await cli(['topology', 'hosts', 'add', 'MySQL002B', '--address', '10.0.2.2', '--port', '3306', '--role', 'slave', '--engine', 'mariadb', '--credentials-from', 'MySQL001A', '--file', cfg, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { added: 'MySQL002B', address: '10.0.2.2', port: 3306, role: 'slave', engine: 'mariadb', credentialsFrom: 'MySQL001A' });
  r = await cli(['topology', 'hosts', 'list', '--file', cfg, '--json']);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual((JSON.parse(r.stdout) as { hosts: Array<{ name: string }> }).hosts.map((h) => h.name), ['MySQL002A', 'MySQL002B']);
  assert.doesNotMatch(r.stdout, /from-config|password/);
  r = await cli(['topology', 'hosts', 'list', '--file', cfg]);
  assert.match(r.stdout, /^host\s+address\s+port\s+role\s+engine/);
  assert.match(r.stdout, /MySQL002B\s+10\.0\.2\.2\s+3306\s+slave\s+mariadb\s+MySQL001A/);
  r = await cli(['topology', 'hosts', 'remove', 'MySQL002B', '--file', cfg]);
  assert.equal(r.code, 0, r.stderr);
  assert.deepEqual(await stored(), ['MySQL002A']);
});

test('topology hosts: bad input is one line, exit 2, and changes nothing', async () => {
  const before = await stored();
  const base = ['--address', '10.0.3.1', '--port', '3306', '--role', 'master', '--engine', 'mariadb', '--file', cfg];
  const cases: Array<[string[], RegExp]> = [
    [['add', 'MySQL003A', ...base.slice(0, 2), '--port', 'x', ...base.slice(4)], /--port/],
    [['add', 'MySQL003A', ...base.slice(0, 2), '--port', '70000', ...base.slice(4)], /--port/],
    [['add', 'MySQL003A', ...base.slice(0, 4), '--role', 'primary', ...base.slice(6)], /--role/],
    [['add', 'MySQL003A', ...base.slice(0, 6), '--engine', 'oracle', ...base.slice(8)], /--engine/],
    [['add', 'MySQL003A', '--address', 'a b', ...base.slice(2)], /--address/],
    [['add', '../x', ...base], /not a valid host record name/],
    [['add', 'MySQL003A', ...base, '--credentials-from', 'Nobody'], /--credentials-from Nobody/],
    [['remove', 'MySQL001A', '--file', cfg], /still named by shard map/],
    [['add', 'MySQL003A', ...base.slice(0, 8), '--file', join(dir, 'missing.json')], /cannot read/],
  ];
  for (const [args, pattern] of cases) assertBadInput(await cli(['topology', 'hosts', ...args]), args.join(' '), pattern);
  assert.deepEqual(await stored(), before);
  const help = await cli(['topology', 'hosts', 'add', '--help']);
  assert.equal(help.code, 0);
  assert.match(help.stdout, /never a secret/);
});

test('a host recorded with `topology hosts add` is declared for the map edits: split to it without editing the config file', async () => {
  const split = ['topology', 'split', '4..7', '--master', 'MySQL007A', '--file', cfg];
  assertBadInput(await cli(split), split.join(' '), /host MySQL007A is not declared .*or record it with `shardkit topology hosts add`/);
  const add = await cli(['topology', 'hosts', 'add', 'MySQL007A', '--address', '10.0.7.1', '--port', '3306', '--role', 'master', '--engine', 'mariadb', '--file', cfg]);
  assert.equal(add.code, 0, add.stderr);
  const r = await cli(split);
  assert.equal(r.code, 0, r.stderr);
  const store = new FileTopologyStore({ path: join(dir, 'topology.json') });
  try {
    const map = (await store.read())!;
    assert.equal(map.locate(5).master, 'MySQL007A');
    assert.equal(map.locate(3).master, 'MySQL001A');
  } finally {
    await store.close();
  }
});

test('`init` and `schema apply` reach a host recorded with `topology hosts add` that the config file lacks (they open the fleet as the edits do)', async () => {
  const target = await openShardTarget(cfg);
  try {
    assert.equal(target.config.hosts.MySQL007A?.host, '10.0.7.1');
    assert.equal(target.config.hosts.MySQL007A?.port, 3306);
    assert.equal(target.map.locate(5).master, 'MySQL007A');
  } finally {
    await target.close();
  }
});
