/**
 * The service gate (#28, src/moves/service-gate.ts): a move does not freeze, so no range switches,
 * until every live service (a heartbeat in the topology store) can reach the target pair. A
 * service whose config never learns the new pair makes the move give up with nothing frozen,
 * naming the service; one that learns it meanwhile lets the move through, and then writes there.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { MemoryTopologyBacking, MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { liveServices, servicesNotKnowing, type ServiceHeartbeat } from '../../src/topology/service-records.js';
import { runMove, type MoveEvent } from '../../src/moves/move-runner.js';
import { createSqliteMoveEngine } from '../../src/moves/sqlite/index.js';
import { testConfig, testSchema } from '../kit/kit-fixture.js';
import { EXPIRED_RECORD_KEEP_MS } from '../../src/topology/record-set.js';

const TARGET = { master: 'MySQL003A', slave: 'MySQL003B' };
const OLD_HOSTS = ['MySQL001A', 'MySQL001B', 'MySQL002A', 'MySQL002B'];

/** A SQLite backend that, like the MySQL and PostgreSQL ones, has addresses only for the hosts its config declared. */
class DeclaredHostsBackend extends SqliteBackend {
  readonly declared = new Set(OLD_HOSTS);

  knowsHost(host: string): boolean {
    return this.declared.has(host);
  }

  learnHosts(hosts: Record<string, unknown>): string[] {
    const added = Object.keys(hosts).filter((h) => !this.declared.has(h));
    for (const h of added) this.declared.add(h);
    return added;
  }
}

interface Service {
  kit: ShardKit;
  backend: DeclaredHostsBackend;
  /** The service's config file's hosts, as it would read them again. */
  config: { hosts: string[] };
}

function fixture() {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-service-gate-'));
  const backing = new MemoryTopologyBacking(ShardMap.fromJSON(testConfig.shardMap));
  const services: Service[] = [];
  const service = (name: string, hosts: string[], intervalMs = 600_000): Service => {
    const backend = new DeclaredHostsBackend({ root, schema: testSchema, maxOpenShards: 16 });
    const config = { hosts };
    const kit = new ShardKit({
      backend, schema: testSchema, topology: new MemoryTopologyStore({ backing }),
      hostSource: () => Object.fromEntries(config.hosts.map((h) => [h, {}])),
      heartbeat: { id: name, intervalMs },
    });
    const s = { kit, backend, config };
    services.push(s);
    return s;
  };
  const store = new MemoryTopologyStore({ backing });
  const engine = createSqliteMoveEngine({ shardPath: (host, shard) => new SqliteBackend({ root, schema: testSchema }).shardPath({ host, shard, fleet: 'objects' }) });
  return {
    backing, store, engine, service,
    async close() {
      for (const s of services) {
        await s.kit.close();
        await s.backend.close();
      }
      await store.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}

test('a live service whose config never learns the new pair: the move gives up before the freeze, naming it; the range stays on the source and takes writes', async () => {
  const f = fixture();
  try {
    const knows = f.service('web-knows', [...OLD_HOSTS, TARGET.master, TARGET.slave]);
    const stale = f.service('web-stale', OLD_HOSTS);
    await knows.kit.ready();
    await stale.kit.ready();
    for (let s = 0; s <= 3; s++) await knows.kit.objects.create('pin', { s }, { shard: s });
    const events: MoveEvent[] = [];
    await assert.rejects(
      runMove({ store: f.store, engine: f.engine, serviceWaitMs: 300, onEvent: (e) => events.push(e), start: { span: { first: 0, last: 3 }, target: TARGET, id: 'move-gate' } }),
      (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /1 running service\(s\) cannot reach MySQL003A and MySQL003B/.test(err.message)
        && /web-stale/.test(err.message) && /does not declare MySQL003A, MySQL003B/.test(err.message) && /back on MySQL001A/.test(err.message),
    );
    assert.ok(!events.some((e) => e.phase === 'frozen'), 'nothing was frozen');
    assert.ok(events.some((e) => e.phase === 'copied' && e.detail?.servicesWaiting !== undefined), 'the wait was reported');
    const map = (await f.store.read())!;
    assert.equal(map.moves().length, 0);
    assert.equal(map.locate(0).master, 'MySQL001A');
    // Both services still write to the range (on the source).
    await stale.kit.objects.create('pin', { after: true }, { shard: 1 });
    await knows.kit.objects.create('pin', { after: true }, { shard: 2 });
  } finally {
    await f.close();
  }
});

test('a service that learns the pair while the move waits: the move goes through, and the service writes to the moved range on the target', async () => {
  const f = fixture();
  try {
    const knows = f.service('web-knows', [...OLD_HOSTS, TARGET.master, TARGET.slave]);
    // Beats every 50 ms: the beat after its config changes reports the hosts as known.
    const late = f.service('web-late', OLD_HOSTS, 50);
    await knows.kit.ready();
    await late.kit.ready();
    const ids = [];
    for (let s = 0; s <= 3; s++) ids.push((await knows.kit.objects.create('pin', { s }, { shard: s })).id);
    const events: MoveEvent[] = [];
    const result = await runMove({
      store: f.store, engine: f.engine, start: { span: { first: 0, last: 3 }, target: TARGET, id: 'move-late' },
      onEvent: (e) => {
        events.push(e);
        // The operator adds the pair to the late service's config once the move says it waits for it.
        if (e.detail?.servicesWaiting !== undefined) late.config.hosts = [...OLD_HOSTS, TARGET.master, TARGET.slave];
      },
    });
    assert.equal(result.outcome, 'switched');
    const waitIndex = events.findIndex((e) => e.detail?.servicesWaiting !== undefined);
    const frozeIndex = events.findIndex((e) => e.phase === 'frozen');
    assert.ok(waitIndex >= 0 && waitIndex < frozeIndex, 'the move waited for web-late before it froze');
    await late.kit.refreshShardMap();
    assert.equal((await late.kit.shardMap()).locate(0).master, TARGET.master);
    const created = await late.kit.objects.create('pin', { after: true }, { shard: 2 });
    assert.deepEqual((await knows.kit.objects.get(created.id))?.data, { after: true });
    assert.equal((await late.kit.objects.getMany(ids)).filter((o) => o !== undefined).length, 4);
  } finally {
    await f.close();
  }
});

test('a service that starts after the check, under the freeze, with a config that lacks the pair: the move aborts instead of switching', async () => {
  const f = fixture();
  try {
    const knows = f.service('web-knows', [...OLD_HOSTS, TARGET.master, TARGET.slave]);
    await knows.kit.ready();
    for (let s = 0; s <= 3; s++) await knows.kit.objects.create('pin', { s }, { shard: s });
    await assert.rejects(
      runMove({
        store: f.store, engine: f.engine, start: { span: { first: 0, last: 3 }, target: TARGET, id: 'move-late-start' },
        afterPhase: async (phase) => {
          if (phase === 'fenced') await f.service('web-new', OLD_HOSTS).kit.ready();
        },
      }),
      (err) => isShardKitError(err, 'SHARD_UNAVAILABLE') && /cannot reach MySQL003A, MySQL003B \(first: web-new/.test(err.message) && /not switching/.test(err.message),
    );
    const map = (await f.store.read())!;
    assert.equal(map.moves().length, 0);
    assert.equal(map.locate(0).master, 'MySQL001A');
    await knows.kit.objects.create('pin', { after: true }, { shard: 0 });
  } finally {
    await f.close();
  }
});

test('only live services count: a record past its ttl, or removed by a closing service, is not waited for', async () => {
  const beat = (at: number, missing: string[], mapVersion = 5): ServiceHeartbeat => ({ at, ttlMs: 1000, mapVersion, missing, hostname: 'h', pid: 1 });
  const records = new Map([
    ['gone', beat(0, ['T'])],
    ['fresh-missing', beat(9_500, ['T'])],
    ['fresh-old-map', beat(9_500, [], 4)],
    ['fresh-ok', beat(9_500, ['other'])],
  ]);
  assert.deepEqual([...liveServices(records, 10_000).keys()], ['fresh-missing', 'fresh-old-map', 'fresh-ok']);
  assert.deepEqual(servicesNotKnowing(records, ['T'], 5, 10_000).map((w) => [w.id, w.missing]), [['fresh-missing', ['T']], ['fresh-old-map', ['T']]]);
  const f = fixture();
  try {
    const stale = f.service('web-closing', OLD_HOSTS);
    await stale.kit.ready();
    assert.deepEqual([...(await f.store.services.readAll()).keys()], ['web-closing']);
    await stale.kit.close();
    assert.equal((await f.store.services.readAll()).size, 0, 'a closing service removes its record');
    const result = await runMove({ store: f.store, engine: f.engine, serviceWaitMs: 300, start: { span: { first: 0, last: 1 }, target: TARGET, id: 'move-free' } });
    assert.equal(result.outcome, 'switched');
  } finally {
    await f.close();
  }
});

test('records of killed processes (kill -9 never removes them): the next move deletes those expired for over an hour, keeps the recent ones, and switches', async () => {
  const f = fixture();
  try {
    const now = Date.now();
    const beat = (at: number): ServiceHeartbeat => ({ at, ttlMs: 10_000, mapVersion: 1, missing: [TARGET.master], hostname: 'h', pid: 1 });
    await f.store.services.put('killed-long-ago', beat(now - EXPIRED_RECORD_KEEP_MS - 60_000));
    await f.store.services.put('killed-recently', beat(now - 60_000));
    const heal = { at: now - EXPIRED_RECORD_KEEP_MS - 60_000, ttlMs: 10_000, mode: 'observe' as const, acting: false, hostname: 'h', pid: 2, suspects: [], pairs: [] };
    await f.store.heal.put('supervisor-long-ago', heal);
    await f.store.heal.put('supervisor-recently', { ...heal, at: now - 60_000 });
    const result = await runMove({ store: f.store, engine: f.engine, serviceWaitMs: 300, start: { span: { first: 0, last: 1 }, target: TARGET, id: 'move-prune' } });
    assert.equal(result.outcome, 'switched');
    assert.deepEqual([...(await f.store.services.readAll()).keys()], ['killed-recently']);
    assert.deepEqual([...(await f.store.heal.readAll()).keys()], ['supervisor-recently']);
  } finally {
    await f.close();
  }
});
