/**
 * `shardkit init` on PostgreSQL while another session holds a lock the DDL needs (issue 26
 * item 4): each wait is bounded (lock_timeout) and retried, so init finishes once the lock is
 * released, and gives up with the retryable LOCK_TIMEOUT (never SHARD_UNAVAILABLE for a live
 * shard), nothing changed, when it never is. The holder releases its lock from the backend's
 * onDdlLockWait hook, which runs after a wait has ended and before the next attempt: no sleep.
 */
import { after, before, beforeEach, test } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { isShardKitError } from '../../src/errors.js';
import { initShards } from '../../src/ops/shard-init.js';
import { PostgresBackend, type DdlLockWait } from '../../src/storage/postgres/index.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { instagramNextIdDdlV1 } from './postgres-next-id-v1.js';
import { DATABASE, startPostgresServers, type PostgresServers } from './postgres-servers.js';

let env: PostgresServers;
let map: ShardMap;
const HOST = 'PG001A';
const SHARD = 2;
const waits: DdlLockWait[] = [];
/** What the next ended wait does (release the holder's lock, or nothing). */
let onWait: (wait: DdlLockWait) => Promise<void> = async () => undefined;

const backendWith = (ddlAttempts: number) => new PostgresBackend({
  hosts: env.hosts,
  // Lock waits of 300 ms, far below the statement timeout: the old code waited for the holder
  // until the statement timeout and failed with SHARD_UNAVAILABLE.
  storage: { user: 'postgres', database: DATABASE, poolSize: 4, queryTimeoutMs: 4000, ddlLockTimeoutMs: 300, ddlAttempts },
  schema: env.schema,
  onDdlLockWait: async (wait) => {
    waits.push(wait);
    await onWait(wait);
  },
});

const connect = async (): Promise<pg.Client> => {
  const c = new pg.Client({ host: env.hosts[HOST]!.host, port: env.hosts[HOST]!.port, user: 'postgres', database: DATABASE });
  await c.connect();
  return c;
};

const objectTable = () => `db0000${SHARD}.${env.schema.types[0]!.table}`;
const mappingTable = () => `db0000${SHARD}.${env.schema.mappings[0]!.table}`;

before(async () => {
  env = await startPostgresServers();
  map = ShardMap.fromJSON(env.config().shardMap);
});

after(async () => {
  await env?.stop();
});

beforeEach(async () => {
  waits.length = 0;
  onWait = async () => undefined;
  await env.dropAllShards();
  const setup = backendWith(1);
  try {
    await initShards(setup, map);
  } finally {
    await setup.close();
  }
});

/** A session holding ROW EXCLUSIVE on the shard's mapping table (a write in flight): CREATE INDEX waits for it. */
async function holdMappingWrite(): Promise<pg.Client> {
  const holder = await connect();
  await holder.query('BEGIN');
  await holder.query(`INSERT INTO ${mappingTable()} (from_id, to_id, "sequence") VALUES (1, 2, 1)`);
  return holder;
}

test('init waits out a write in flight on the shard: the first wait ends, the writer commits, init completes the shard and the write is kept', async () => {
  const backend = backendWith(8);
  const holder = await holdMappingWrite();
  try {
    const sql = await connect();
    await sql.query(`DROP TABLE ${objectTable()}`);
    await sql.end();
    onWait = async () => {
      await holder.query('COMMIT');
      onWait = async () => undefined;
    };
    const result = await initShards(backend, map);
    assert.equal(result.created, 1);
    assert.ok(waits.length >= 1, 'init waited for the writer at least once');
    assert.deepEqual({ host: waits[0]!.host, shard: waits[0]!.shard, fleet: waits[0]!.fleet, attempt: waits[0]!.attempt }, { host: HOST, shard: SHARD, fleet: 'objects', attempt: 1 });
    assert.ok((await backend.listShards(HOST, 'objects')).includes(SHARD), 'the shard is complete');
    const check = await connect();
    assert.equal((await check.query(`SELECT count(*)::int AS n FROM ${mappingTable()}`)).rows[0]!.n, 1, 'the writer\'s row is there');
    assert.equal((await check.query(`SELECT count(*)::int AS n FROM ${objectTable()}`)).rows[0]!.n, 0, 'the dropped table is back');
    await check.end();
  } finally {
    await holder.end();
    await backend.close();
  }
});

test('init upgrading a generator waits out a transaction that called the old next_id(), then upgrades it', async () => {
  const backend = backendWith(8);
  const sql = await connect();
  await sql.query(`DROP SEQUENCE db0000${SHARD}.next_id_counter`);
  for (const statement of instagramNextIdDdlV1(SHARD)) await sql.query(statement);
  const holder = await connect();
  try {
    await holder.query('BEGIN');
    const before = BigInt((await holder.query<{ id: string }>(`SELECT db0000${SHARD}.next_id() AS id`)).rows[0]!.id);
    onWait = async () => {
      await holder.query('COMMIT');
      onWait = async () => undefined;
    };
    assert.equal((await initShards(backend, map)).created, 1);
    assert.ok(waits.length >= 1);
    assert.ok((await backend.listShards(HOST, 'objects')).includes(SHARD), 'the generator is the current one');
    const [next] = await backend.nextInstagramIds({ host: HOST, shard: SHARD, fleet: 'objects' });
    assert.ok(next! > before, 'the upgraded generator continues after the old one\'s last ID');
  } finally {
    await holder.end();
    await sql.end();
    await backend.close();
  }
});

test('init gives up with the retryable LOCK_TIMEOUT when the lock is never released, and changes nothing', async () => {
  const backend = backendWith(3);
  const holder = await holdMappingWrite();
  const sql = await connect();
  try {
    await sql.query(`DROP TABLE ${objectTable()}`);
    await assert.rejects(initShards(backend, map), (err: unknown) => {
      assert.ok(isShardKitError(err, 'LOCK_TIMEOUT'), String(err));
      assert.equal(err.status, 503);
      assert.match(err.message, /shard 2 \(db00002 on PG001A\).*3 waits of 300 ms.*nothing was changed/);
      return true;
    });
    assert.deepEqual(waits.map((w) => w.attempt), [1, 2, 3]);
    assert.ok(!(await backend.listShards(HOST, 'objects')).includes(SHARD), 'the shard is still incomplete');
    assert.equal((await sql.query('SELECT to_regclass($1) AS t', [objectTable()])).rows[0]!.t, null, 'the dropped table was not created');
    const { rows } = await sql.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'shardkit' AND wait_event_type = 'Lock'");
    assert.equal(rows[0]!.n, 0, 'no shardkit session is left waiting');
    // Once the writer is gone the same command finishes.
    await holder.query('COMMIT');
    assert.equal((await initShards(backend, map)).created, 1);
  } finally {
    await holder.end();
    await sql.end();
    await backend.close();
  }
});
