/**
 * The operator's tools see the hosts a service sees (#28: hosts are topology): `shards move --to`
 * and the map edits accept a pair recorded with `topology hosts add` that the config file lacks,
 * reached with the config's credentials. The config's own entries win over a record.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, MemoryTopologyStore, parseConfig } from '../../src/index.js';
import { withHostRecords } from '../../src/ops/fleet-hosts.js';

function config() {
  const d = defaultConfig({ shards: 8, pairs: 1 });
  return parseConfig({ ...d, storage: { backend: 'mysql', user: 'app', password: 'pw' }, hosts: { ...d.hosts, MySQL001A: { host: '10.0.1.1', port: 3306, user: 'ops', password: 'secret' }, MySQL001B: { host: '10.0.1.2', port: 3306 } } });
}

test('host records the config lacks join its hosts, with the credentials of the host they name; the config wins', async () => {
  const store = new MemoryTopologyStore();
  await store.hosts.put('MySQL002A', { address: '10.0.2.1', port: 3307, role: 'master', engine: 'mariadb', credentialsFrom: 'MySQL001A' });
  await store.hosts.put('MySQL002B', { address: '10.0.2.2', port: 3307, role: 'slave', engine: 'mariadb' });
  await store.hosts.put('MySQL001B', { address: '10.9.9.9', port: 1, role: 'slave', engine: 'mariadb' });
  const c = config();
  const seen = await withHostRecords(c, store);
  assert.deepEqual(seen.hosts.MySQL002A, { host: '10.0.2.1', port: 3307, user: 'ops', password: 'secret' });
  assert.deepEqual(seen.hosts.MySQL002B, { host: '10.0.2.2', port: 3307 });
  assert.deepEqual(seen.hosts.MySQL001B, c.hosts.MySQL001B, 'the config file\'s own entry wins over a record of the same name');
  assert.equal(c.hosts.MySQL002A, undefined, 'the config given is not changed');
  await store.close();
});

test('a store with no host records leaves the config as it is', async () => {
  const store = new MemoryTopologyStore();
  const c = config();
  assert.equal(await withHostRecords(c, store), c);
  await store.close();
});
