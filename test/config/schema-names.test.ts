import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, parseConfig, resolveSchema, type ConfigInput } from '../../src/config/config.js';
import { ShardKitError } from '../../src/errors.js';

type SchemaInput = NonNullable<ConfigInput['schema']>;

/** The default config with its schema changed by `edit`. */
function withSchema(edit: (schema: SchemaInput) => void): ConfigInput {
  const config = defaultConfig({ shards: 16, pairs: 2 });
  edit(config.schema!);
  return config;
}

function assertInvalid(config: ConfigInput, ...parts: RegExp[]): string {
  let message = '';
  assert.throws(() => parseConfig(config), (err: unknown) => {
    assert.ok(err instanceof ShardKitError, String(err));
    assert.equal(err.code, 'INVALID_CONFIG');
    message = err.message;
    return true;
  });
  assert.doesNotMatch(message, /\n/, 'one line');
  for (const p of parts) assert.match(message, p);
  return message;
}

test('the default schema and explicit distinct tables are accepted', () => {
  const schema = resolveSchema(parseConfig(defaultConfig()));
  assert.deepEqual(schema.keyspaces.map((k) => k.table), ['lookup_email', 'lookup_username', 'lookup_ip']);
  const config = parseConfig(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'phone', table: 'phones_by_number' }];
    s.types = [...s.types!, { name: 'lookup', id: 9 }];
  }));
  assert.deepEqual(resolveSchema(config).types.at(-1), { name: 'lookup', id: 9, table: 'lookups' });
});

test('a mapping named like a keyspace\'s lookup table is refused, naming both', () => {
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'lookup_email', from: 'user', to: 'user' }];
  }), /mapping lookup_email/, /keyspace email/, /table name lookup_email|name lookup_email/);
});

test('a type table equal to a lookup table, a mapping table or another type\'s table is refused', () => {
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'board_keys', table: 'boards' }];
  }), /type board and keyspace board_keys/, /boards/);
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'like', id: 7, table: 'user_likes_pins' }];
  }), /type like and mapping user_likes_pins/);
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'photo', id: 7, table: 'pins' }];
  }), /type pin and type photo/, /pins/);
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'pin_tags', from: 'pin', to: 'pin', table: 'lookup_ip' }];
  }), /mapping pin_tags and keyspace ip/);
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'nick', table: 'lookup_email' }];
  }), /keyspace email and keyspace nick/);
});

test('a table named like a mapping\'s SQLite page index is refused', () => {
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'seq', table: 'board_has_pins_by_sequence' }];
  }), /keyspace seq and the page index of mapping board_has_pins/);
});

test('default table names longer than 63 characters and sqlite_ names are refused', () => {
  const long = `k${'x'.repeat(56)}`;
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, long];
  }), new RegExp(`keyspace ${long} would use the table name lookup_${long}, longer than 63`));
  // The same keyspace with a table of its own is fine.
  parseConfig(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: long, table: 'lookup_long' }];
  }));
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'sqlite_thing', id: 8 }];
  }), /type sqlite_thing would use the table name sqlite_things; names starting with sqlite_ are reserved/);
});

test('a mapping table whose page index name would pass 63 characters is refused (PostgreSQL would cut it and skip the index)', () => {
  // 51 characters + "_by_sequence" = 63: the longest that PostgreSQL keeps whole.
  const longest = `m${'x'.repeat(50)}`;
  const schema = resolveSchema(parseConfig(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: longest, from: 'board', to: 'pin' }];
  })));
  assert.ok(schema.mappings.some((m) => m.table === longest));
  for (const name of [`${longest}x`, `m${'x'.repeat(62)}`]) {
    assertInvalid(withSchema((s) => {
      s.mappings = [...s.mappings!, { name, from: 'board', to: 'pin' }];
    }), new RegExp(`page index of mapping ${name} would be named ${name}_by_sequence, longer than the 63 characters`), /at most 51 characters/);
  }
  // A long mapping name with a short table of its own is fine.
  parseConfig(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: `m${'x'.repeat(62)}`, table: 'long_mapping', from: 'board', to: 'pin' }];
  }));
});

test('a table named like the Instagram ID generator\'s state sequence (next_id_state) is refused', () => {
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'next_id_state', from: 'board', to: 'pin' }];
  }), /the Instagram ID generator's state sequence and mapping next_id_state would both use the name next_id_state/);
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'tag', id: 9, table: 'next_id_state' }];
  }), /would both use the name next_id_state/);
});
