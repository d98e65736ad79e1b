import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/errors.js';
import { parseSourceUrl, redact } from '../../src/migrate/table/source-url.js';
import { startOf } from '../../src/migrate/table/high-water.js';
import { RowSkip, rowData, rowKey, toJson, type RowShape } from '../../src/migrate/table/row-data.js';
import { parseMappingSpec } from '../../src/cli/actions/migrate-table.js';

test('source URLs: mysql, mariadb and postgres with one database; the password never shows', () => {
  assert.deepEqual(parseSourceUrl('mariadb://u:secret@db:3306/legacy'), { engine: 'mysql', url: 'mysql://u:secret@db:3306/legacy', display: 'mariadb://u:***@db:3306/legacy' });
  assert.equal(parseSourceUrl('postgresql://u@db/legacy').engine, 'postgres');
  for (const bad of ['redis://db/0', 'mysql//db', 'mysql://db', 'mysql://db/a/b', 'not a url']) {
    assert.throws(() => parseSourceUrl(bad), (e: unknown) => e instanceof ShardKitError && e.code === 'INVALID_ARGUMENT', bad);
  }
  assert.throws(() => parseSourceUrl('redis://u:secret@db/0'), (e: unknown) => !(e as Error).message.includes('secret'));
  assert.equal(redact('postgres://u:p%40ss@h/d'), 'postgres://u:***@h/d');
});

test('the read start: the high-water mark minus the overlap, in the server\'s text form', () => {
  assert.equal(startOf('2026-11-25 09:10:07.123456', 'timestamp', 5), '2026-11-25 09:10:02.123456');
  assert.equal(startOf('2026-11-25 00:00:01', 'datetime', 2.5), '2026-11-24 23:59:58.500000');
  assert.equal(startOf('2026-11-25 09:10:07.5+00', 'timestamp', 1), '2026-11-25 09:10:06.500000+00');
  assert.equal(startOf('2026-11-25', 'date', 86400), '2026-11-24');
  assert.equal(startOf('9007199254740993', 'bigint', 3), '9007199254740990');
  assert.equal(startOf('2026-11-25 09:10:07', 'datetime', 0), '2026-11-25 09:10:07');
});

test('values: exact JSON per kind; malformed JSON is a skip with the column named', () => {
  const col = (kind: Parameters<typeof toJson>[0]['kind']) => ({ name: 'c', kind, typeName: kind });
  assert.equal(toJson(col('int'), '-3', false), -3);
  assert.equal(toJson(col('bigint'), '18446744073709551615', false), '18446744073709551615');
  assert.equal(toJson(col('decimal'), '12.50', false), '12.50');
  assert.equal(toJson(col('float'), 'NaN', false), 'NaN');
  assert.equal(toJson(col('bool'), 't', false), true);
  assert.equal(toJson(col('timestamp'), '2026-11-25 09:10:07.5+00', false), '2026-11-25T09:10:07.5Z');
  assert.equal(toJson(col('timestamp'), '2026-11-25 09:10:07.500000', false), '2026-11-25T09:10:07.500000Z');
  assert.equal(toJson(col('binary'), Buffer.from([0, 1, 2]), false), 'AAEC');
  assert.equal(toJson(col('binary'), '\\x000102', false), 'AAEC');
  assert.deepEqual(toJson(col('json'), '{"a":[1]}', false), { a: [1] });
  assert.throws(() => toJson(col('text'), '{', true), (e: unknown) => e instanceof RowSkip && /malformed JSON in column c/.test(e.reason));
  const shape: RowShape = { columns: [{ name: 'id', kind: 'int', typeName: 'int' }, { name: 'data', kind: 'text', typeName: 'text' }], id: 0, changed: 0, json: new Set(), dataColumn: 1 };
  assert.deepEqual(rowData(shape, ['7', '{"x":1}']), { x: 1 });
  assert.throws(() => rowData(shape, ['7', '[1]']), RowSkip);
  assert.throws(() => rowKey(shape, [null, '{}']), (e: unknown) => e instanceof RowSkip && /NULL id/.test(e.reason));
  assert.deepEqual(parseMappingSpec('board_id:board_has_pins:old_boards'), { column: 'board_id', mapping: 'board_has_pins', keyspace: 'old_boards' });
  assert.throws(() => parseMappingSpec('board_id:'), ShardKitError);
});
