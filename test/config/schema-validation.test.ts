import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig, loadConfigFile, parseConfig, resolveSchema, type ConfigInput } from '../../src/config/config.js';
import { ShardKitError } from '../../src/errors.js';

// Every case starts from a valid default config and changes one thing.

type SchemaInput = NonNullable<ConfigInput['schema']>;
type Loose = Record<string, unknown>;

function valid(): ConfigInput {
  return defaultConfig({ shards: 16, pairs: 2 });
}

function withSchema(edit: (schema: SchemaInput) => void): ConfigInput {
  const config = valid();
  edit(config.schema!);
  return config;
}

/** The default has 4 types, 6 mappings and 3 keyspaces: an appended entry has these indexes. */
const NEW_TYPE = 4;
const NEW_MAPPING = 6;
const NEW_KEYSPACE = 3;

const IDENTIFIER_RULE = /must match \^\[a-z\]\[a-z0-9_\]\{0,62\}\$/;

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** parseConfig throws INVALID_CONFIG, in one line, matching every pattern. */
function assertInvalid(config: unknown, ...parts: RegExp[]): string {
  let message: string | undefined;
  assert.throws(() => parseConfig(config), (err: unknown) => {
    assert.ok(err instanceof ShardKitError, `expected a ShardKitError, got ${String(err)}`);
    assert.equal(err.code, 'INVALID_CONFIG');
    assert.equal(err.status, 400);
    message = err.message;
    return true;
  });
  assert.ok(message !== undefined);
  assert.doesNotMatch(message, /\n/, 'one line');
  for (const p of parts) assert.match(message, p);
  return message;
}

test('the unchanged default config is valid (the baseline every case below changes)', () => {
  const config = parseConfig(valid());
  assert.equal(config.schema.types.length, NEW_TYPE);
  assert.equal(config.schema.mappings.length, NEW_MAPPING);
  assert.equal(config.schema.keyspaces.length, NEW_KEYSPACE);
});

test('an object type id outside 0..1023, fractional or a string is INVALID_CONFIG at schema.types.N.id', () => {
  const at = /^invalid config at schema\.types\.1\.id: /;
  const cases: Array<[unknown, RegExp]> = [
    [-1, />=\s*0\b/],
    [1024, /<=\s*1023\b/],
    [1.5, /\bint/],
    ['1', /number.*string/],
    [null, /number.*null/],
  ];
  for (const [id, detail] of cases) {
    assertInvalid(withSchema((s) => {
      (s.types![1] as Loose).id = id;
    }), at, detail);
  }
  // Both ends of the range are allowed (and still distinct from the other types' ids 1, 3, 4).
  for (const id of [0, 1023]) {
    const config = parseConfig(withSchema((s) => {
      s.types![1]!.id = id;
    }));
    assert.equal(resolveSchema(config).types[1]!.id, id);
  }
});

test('two types with the same id are refused, naming the id', () => {
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'topic', id: 2 }];
  }), /^invalid schema: type id 2 is declared twice$/);
});

test('two types with the same name are refused, naming the name', () => {
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'board', id: 9 }];
  }), /^invalid schema: type name board is declared twice$/);
  // Same name with a table of its own: still the same type name.
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'board', id: 9, table: 'other_boards' }];
  }), /^invalid schema: type name board is declared twice$/);
});

test('two mappings with the same name are refused, naming the name', () => {
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'board_has_pins', from: 'user', to: 'pin' }];
  }), /^invalid schema: mapping name board_has_pins is declared twice$/);
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'board_has_pins', from: 'board', to: 'pin', table: 'board_pins_2' }];
  }), /^invalid schema: mapping name board_has_pins is declared twice$/);
});

test('two keyspaces with the same name are refused, in the string and the object form', () => {
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, 'email'];
  }), /^invalid schema: keyspace email is declared twice$/);
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'username', table: 'usernames_2' }];
  }), /^invalid schema: keyspace username is declared twice$/);
});

test('a mapping from or to a type that does not exist is refused, naming the mapping and the type', () => {
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'topic_has_pins', from: 'topic', to: 'pin' }];
  }), /^invalid schema: mapping topic_has_pins comes from unknown type topic$/);
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'pin_in_topic', from: 'pin', to: 'topic' }];
  }), /^invalid schema: mapping pin_in_topic goes to unknown type topic$/);
  // A table name is not a type name: `pins` is the table of type `pin`.
  assertInvalid(withSchema((s) => {
    s.mappings = [...s.mappings!, { name: 'pin_related', from: 'pins', to: 'pin' }];
  }), /^invalid schema: mapping pin_related comes from unknown type pins$/);
});

const BAD_NAMES: Array<[string, string]> = [
  ['upper case', 'Pin'],
  ['leading digit', '9pin'],
  ['leading underscore', '_pin'],
  ['space', 'my pin'],
  ['double quote', 'pin"x'],
  ['single quote', "pin'x"],
  ['path', '../x'],
  ['dash', 'pin-x'],
  ['dot', 'pin.x'],
  ['non-ASCII letter', 'p\u00efn'],
  ['empty', ''],
  ['64 characters', `a${'b'.repeat(63)}`],
];

test('type, mapping and keyspace names that break ^[a-z][a-z0-9_]{0,62}$ are INVALID_CONFIG at their field', () => {
  for (const [why, name] of BAD_NAMES) {
    const label = `${why}: ${JSON.stringify(name)}`;
    const check = (config: ConfigInput, path: string) => {
      try {
        assertInvalid(config, new RegExp(`^invalid config at ${escape(path)}: `), IDENTIFIER_RULE);
      } catch (err) {
        (err as Error).message = `${label} at ${path}: ${(err as Error).message}`;
        throw err;
      }
    };
    check(withSchema((s) => {
      s.types = [...s.types!, { name, id: 9 }];
    }), `schema.types.${NEW_TYPE}.name`);
    check(withSchema((s) => {
      s.mappings = [...s.mappings!, { name, from: 'pin', to: 'board' }];
    }), `schema.mappings.${NEW_MAPPING}.name`);
    // A keyspace is a bare name or { name, table }.
    check(withSchema((s) => {
      s.keyspaces = [...s.keyspaces!, name];
    }), `schema.keyspaces.${NEW_KEYSPACE}`);
    check(withSchema((s) => {
      s.keyspaces = [...s.keyspaces!, { name }];
    }), `schema.keyspaces.${NEW_KEYSPACE}.name`);
    // The same rule holds for explicit tables and for a mapping's from/to.
    check(withSchema((s) => {
      s.types = [...s.types!, { name: 'topic', id: 9, table: name }];
    }), `schema.types.${NEW_TYPE}.table`);
    check(withSchema((s) => {
      s.mappings = [...s.mappings!, { name: 'pin_related', from: 'pin', to: 'pin', table: name }];
    }), `schema.mappings.${NEW_MAPPING}.table`);
    check(withSchema((s) => {
      s.keyspaces = [...s.keyspaces!, { name: 'phone', table: name }];
    }), `schema.keyspaces.${NEW_KEYSPACE}.table`);
    check(withSchema((s) => {
      s.mappings = [...s.mappings!, { name: 'pin_related', from: name, to: 'pin' }];
    }), `schema.mappings.${NEW_MAPPING}.from`);
  }
});

test('names at the edges of the identifier rule are accepted', () => {
  const longest = `t${'x'.repeat(62)}`; // 63 characters
  const config = parseConfig(withSchema((s) => {
    // A 63-character type name needs a table of its own: the default (name + "s") would be 64.
    s.types = [...s.types!, { name: 'a', id: 9 }, { name: 'b0_9', id: 10 }, { name: longest, id: 11, table: 'long_type' }];
    s.mappings = [...s.mappings!, { name: 'a_to_b0_9', from: 'a', to: 'b0_9' }];
    s.keyspaces = [...s.keyspaces!, 'k', { name: 'k_2', table: 'k2' }];
  }));
  const schema = resolveSchema(config);
  assert.deepEqual(schema.types.slice(NEW_TYPE), [
    { name: 'a', id: 9, table: 'as' },
    { name: 'b0_9', id: 10, table: 'b0_9s' },
    { name: longest, id: 11, table: 'long_type' },
  ]);
  assert.deepEqual(schema.keyspaces.slice(NEW_KEYSPACE), [
    { name: 'k', table: 'lookup_k' },
    { name: 'k_2', table: 'k2' },
  ]);
});

test('unknown keys are refused: top level, schema, type, mapping and keyspace object', () => {
  const config = valid() as Loose;
  config.extra = true;
  assertInvalid(config, /^invalid config at \(root\): /, /[Uu]nrecognized key/, /"extra"/);

  assertInvalid(withSchema((s) => {
    (s as Loose).indexes = [];
  }), /^invalid config at schema: /, /[Uu]nrecognized key/, /"indexes"/);
  assertInvalid(withSchema((s) => {
    (s.types![0] as Loose).color = 'red';
  }), /^invalid config at schema\.types\.0: /, /[Uu]nrecognized key/, /"color"/);
  // A likely typo: `tableName` for `table`.
  assertInvalid(withSchema((s) => {
    s.types = [...s.types!, { name: 'topic', id: 9, tableName: 'topic_rows' } as never];
  }), new RegExp(`^invalid config at schema\\.types\\.${NEW_TYPE}: `), /"tableName"/);
  assertInvalid(withSchema((s) => {
    (s.mappings![2] as Loose).unique = true;
  }), /^invalid config at schema\.mappings\.2: /, /[Uu]nrecognized key/, /"unique"/);
  assertInvalid(withSchema((s) => {
    s.keyspaces = [...s.keyspaces!, { name: 'phone', ttl: 5 } as never];
  }), new RegExp(`^invalid config at schema\\.keyspaces\\.${NEW_KEYSPACE}: `), /[Uu]nrecognized key/, /"ttl"/);
});

test('a config without a shardMap (or without a schema) is refused at that key', () => {
  const noMap = valid() as Loose;
  delete noMap.shardMap;
  assertInvalid(noMap, /^invalid config at shardMap: /);
  const noSchema = valid() as Loose;
  delete noSchema.schema;
  assertInvalid(noSchema, /^invalid config at schema: /);
  assertInvalid({ ...valid(), shardMap: null }, /^invalid config at shardMap: /);
});

test('loadConfigFile applies the same checks to a file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-config-'));
  try {
    const file = join(dir, 'shardkit.json');
    writeFileSync(file, JSON.stringify(withSchema((s) => {
      s.types = [...s.types!, { name: 'topic', id: 3 }];
    })));
    assert.throws(() => loadConfigFile(file), (err: unknown) => {
      assert.ok(err instanceof ShardKitError);
      assert.equal(err.code, 'INVALID_CONFIG');
      assert.equal(err.message, 'invalid schema: type id 3 is declared twice');
      return true;
    });
    writeFileSync(file, JSON.stringify(valid()));
    assert.equal(loadConfigFile(file).schema.types.length, NEW_TYPE);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('an added type and mapping parse and resolve with default and custom table names', () => {
  const config = parseConfig(withSchema((s) => {
    s.types = [...s.types!, { name: 'topic', id: 9 }, { name: 'tag', id: 1023, table: 'tag_rows' }];
    s.mappings = [
      ...s.mappings!,
      { name: 'topic_has_pins', from: 'topic', to: 'pin' },
      { name: 'pin_has_tags', from: 'pin', to: 'tag', table: 'pin_tag_edges' },
    ];
  }));
  const schema = resolveSchema(config);
  assert.deepEqual(schema.types.slice(NEW_TYPE), [
    { name: 'topic', id: 9, table: 'topics' },
    { name: 'tag', id: 1023, table: 'tag_rows' },
  ]);
  assert.deepEqual(schema.mappings.slice(NEW_MAPPING), [
    { name: 'topic_has_pins', from: 'topic', to: 'pin', table: 'topic_has_pins' },
    { name: 'pin_has_tags', from: 'pin', to: 'tag', table: 'pin_tag_edges' },
  ]);
  // The default entries keep their default tables.
  assert.deepEqual(schema.types.slice(0, NEW_TYPE).map((t) => t.table), ['pins', 'boards', 'users', 'comments']);
  assert.equal(schema.mappings.find((m) => m.name === 'board_has_pins')?.table, 'board_has_pins');
});
