import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/errors.js';
import { isConnectionError, isHostDownError, mapMysqlError } from '../../src/storage/mysql/mysql-errors.js';
import { shardDdl } from '../../src/storage/mysql/mysql-ddl.js';
import { resolveSchema, defaultConfig, parseConfig } from '../../src/config/config.js';

const err = (code: string, message = code) => Object.assign(new Error(message), { code });
const ctx = { host: 'MySQL001A', shard: 3429, fleet: 'objects' as const };

test('connection failures and timeouts are 503 SHARD_UNAVAILABLE naming the shard and its host', () => {
  for (const code of ['ECONNREFUSED', 'ETIMEDOUT', 'ECONNRESET', 'PROTOCOL_CONNECTION_LOST', 'PROTOCOL_SEQUENCE_TIMEOUT', 'ENOENT', 'ER_SERVER_SHUTDOWN', 'ER_LOCK_WAIT_TIMEOUT', 'ER_OPTION_PREVENTS_STATEMENT']) {
    const mapped = mapMysqlError(err(code), ctx);
    assert.equal(mapped.code, 'SHARD_UNAVAILABLE', code);
    assert.equal(mapped.status, 503);
    assert.match(mapped.message, /^shard 3429 \(db03429 on MySQL001A\) is unavailable: /);
    // readOnly: the fence of a planned failover, which ShardKit handles like a move's fence (kit-context.ts).
    assert.deepEqual(mapped.details, { host: 'MySQL001A', shard: 3429, fleet: 'objects', driverCode: code, ...(code === 'ER_OPTION_PREVENTS_STATEMENT' ? { readOnly: true } : {}) });
  }
  assert.match(mapMysqlError(err('ECONNREFUSED'), { host: 'msdb001a', shard: 7, fleet: 'lookups' }).message, /^mod shard 7 \(db00007 on msdb001a\)/);
});

test('other driver errors keep stable codes; ShardKitErrors pass through unchanged', () => {
  assert.equal(mapMysqlError(err('ER_NO_SUCH_TABLE'), ctx).code, 'SHARD_UNAVAILABLE');
  assert.match(mapMysqlError(err('ER_NO_SUCH_TABLE'), ctx).message, /run `shardkit init`/);
  assert.equal(mapMysqlError(err('ER_DUP_ENTRY'), ctx).code, 'ALREADY_EXISTS');
  assert.equal(mapMysqlError(err('ER_NET_PACKET_TOO_LARGE'), ctx).code, 'PAYLOAD_TOO_LARGE');
  assert.equal(mapMysqlError(err('ER_PARSE_ERROR'), ctx).code, 'INTERNAL');
  assert.equal(mapMysqlError(new Error('no code'), { host: 'h' }).message, 'host h: no code');
  const own = new ShardKitError('INVALID_ID', 'x');
  assert.equal(mapMysqlError(own, ctx), own);
});

test('only unreachable-server errors mark a host down; query timeouts only discard the connection', () => {
  assert.equal(isHostDownError(err('ECONNREFUSED')), true);
  assert.equal(isHostDownError(err('ETIMEDOUT')), true);
  assert.equal(isHostDownError(err('PROTOCOL_SEQUENCE_TIMEOUT')), false);
  assert.equal(isHostDownError(err('ACQUIRE_TIMEOUT')), false);
  assert.equal(isConnectionError(err('PROTOCOL_SEQUENCE_TIMEOUT')), true);
  assert.equal(isConnectionError(err('ER_DUP_ENTRY')), false);
});

test('shard DDL: one database, every table of the fleet, all IF NOT EXISTS, InnoDB', () => {
  const schema = resolveSchema(parseConfig(defaultConfig({ shards: 16, pairs: 2 })));
  const objects = shardDdl(schema, 'objects', 3429);
  assert.equal(objects.length, 1 + schema.types.length + schema.mappings.length);
  assert.match(objects[0]!, /^CREATE DATABASE IF NOT EXISTS `db03429`/);
  for (const s of objects.slice(1)) {
    assert.match(s, /^CREATE TABLE IF NOT EXISTS `db03429`\.`[a-z_]+` \(/);
    assert.match(s, /ENGINE=InnoDB/);
  }
  assert.match(objects[1]!, /local_id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT PRIMARY KEY/);
  const lookups = shardDdl(schema, 'lookups', 1537);
  assert.deepEqual(lookups.slice(1).map((s) => /`db01537`\.`([a-z_]+)`/.exec(s)![1]), schema.keyspaces.map((k) => k.table));
  assert.deepEqual(shardDdl(schema, 'objects', 1, new Set(['pins'])).length, 2);
});
