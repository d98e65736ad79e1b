import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isShardKitError } from '../../src/errors.js';
import { initShards } from '../../src/ops/shard-init.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { ShardErrorEvent } from '../../src/kit/types.js';
import { shardkit } from '../mysql/helpers.js';
import { DATABASE, startPostgresServers, type PostgresServers } from './postgres-servers.js';

// What the ShardKit-level suite (test/kit/kit-suite.ts, run on PostgreSQL by kit-postgres.test.ts)
// does not cover: `shardkit init` on PostgreSQL and a server stopped under a live kit. ShardKit is
// built by ShardKit.open from a postgres config (through backend-factory and
// src/storage/postgres/index.ts), over two real PostgreSQL 15 servers.
let env: PostgresServers;
let dataDir: string;

before(async () => {
  env = await startPostgresServers();
  dataDir = mkdtempSync(join(tmpdir(), 'shardkit-pgkit-'));
});

after(async () => {
  await env?.stop();
  if (dataDir) rmSync(dataDir, { recursive: true, force: true });
});

async function openKit(storage: { connectTimeoutMs?: number; queryTimeoutMs?: number } = {}): Promise<ShardKit> {
  const kit = await ShardKit.open({ config: env.config(storage), dataDir });
  assert.equal(kit.backend.kind, 'postgres');
  const result = await initShards(kit.backend, await kit.shardMap());
  assert.equal(result.total, 16);
  return kit;
}

test('shardkit init creates every shard schema on its master and a second run creates nothing', async () => {
  await env.dropAllShards();
  const configPath = join(dataDir, 'init.json');
  writeFileSync(configPath, JSON.stringify(env.config()));
  const first = await shardkit(['init', '--config', configPath, '--json']);
  assert.equal(first.code, 0, first.stderr);
  const r1 = JSON.parse(first.stdout) as { total: number; created: number; hosts: Record<string, { objects: number; lookups: number }> };
  assert.equal(r1.total, 16);
  assert.equal(r1.created, 16);
  assert.deepEqual(r1.hosts, { PG001A: { objects: 4, lookups: 4 }, PG002A: { objects: 4, lookups: 4 } });
  const schemas = await env.servers[1]!.sql<{ nspname: string }>(DATABASE, `SELECT nspname FROM pg_namespace WHERE nspname LIKE 'db%' ORDER BY 1`);
  assert.deepEqual(schemas.map((s) => s.nspname), ['db00004', 'db00005', 'db00006', 'db00007']);
  const second = await shardkit(['init', '--config', configPath, '--json']);
  assert.equal(second.code, 0, second.stderr);
  assert.equal((JSON.parse(second.stdout) as { created: number }).created, 0);
  await env.dropAllShards();
});

test('a server stopped mid-test fails its shards with SHARD_UNAVAILABLE (no hang) and the same kit recovers after restart', { timeout: 60_000 }, async (t) => {
  await env.dropAllShards();
  const kit = await openKit({ connectTimeoutMs: 1000, queryTimeoutMs: 1500 });
  const events: ShardErrorEvent[] = [];
  kit.events.on('shard-error', (e: ShardErrorEvent) => events.push(e));
  try {
    const onA = await kit.objects.create('pin', { v: 1 }, { shard: 1 }); // PG001A
    const onB = await kit.objects.create('pin', { v: 2 }, { shard: 5 }); // PG002A
    for (const mode of ['fast', 'immediate'] as const) {
      events.length = 0;
      await env.servers[0]!.stop(mode);
      const started = Date.now();
      for (const call of [() => kit.objects.get(onA.id), () => kit.objects.update(onA.id, (d) => ({ ...d, v: 3 })), () => kit.mappings.count('pin_owned_by_board', onA.id)]) {
        await assert.rejects(call(), (err) => {
          assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
          assert.match(err.message, /shard 1 \(db00001 on PG001A\) is unavailable/);
          return true;
        });
      }
      t.diagnostic(`${mode} stop: 3 calls failed in ${Date.now() - started} ms`);
      assert.ok(events.length >= 3 && events.every((e) => e.host === 'PG001A'));
      // The other server is unaffected.
      assert.deepEqual((await kit.objects.get(onB.id)).data, { v: 2 });
      await env.servers[0]!.startServer();
      // The host stays marked down for at most connectTimeoutMs after the last failure; then it is
      // retried. 400 attempts (40 s, within the test's 60 s timeout) only guard against a hang: 10 s was
      // a timing margin.
      let back: unknown;
      for (let attempt = 0; attempt < 400; attempt++) {
        try {
          back = (await kit.objects.get(onA.id)).data;
          break;
        } catch (err) {
          assert.ok(isShardKitError(err, 'SHARD_UNAVAILABLE'), String(err));
          await new Promise((r) => setTimeout(r, 100));
        }
      }
      // The failed update (v: 3) never happened; the increment acknowledged before the immediate (crash) stop survived it.
      assert.deepEqual(back, mode === 'fast' ? { v: 1 } : { v: 1, n: 1 });
      const bumped = await kit.objects.update(onA.id, (d) => ({ ...d, n: ((d.n as number | undefined) ?? 0) + 1 }));
      assert.equal(bumped.data.v, 1);
    }
    assert.equal((await kit.objects.get(onA.id)).data.n, 2);
  } finally {
    await kit.close();
    // A failure above may leave the server stopped, or the admin pool's host marked down for a moment.
    await env.servers[0]!.startServer();
    for (let attempt = 0; ; attempt++) {
      try {
        await env.dropAllShards();
        break;
      } catch (err) {
        if (attempt >= 30 || !isShardKitError(err, 'SHARD_UNAVAILABLE')) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }
});
