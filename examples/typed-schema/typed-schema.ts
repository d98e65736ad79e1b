// A typed schema: the names of types, mappings and keyspaces are checked by the compiler, and
// each type's data is your own interface (no index signature needed).
//
//   npx tsx examples/typed-schema/typed-schema.ts [dataDir]
//
// Runs on the embedded default (SQLite files under a temporary directory unless given one).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKit, defaultConfig } from 'shardkit';

interface User {
  username: string;
  email?: string;
}
interface Board {
  name: string;
}
interface Pin {
  details: string;
  link?: string;
}

/** The config's default schema (defaultConfig()), as TypeScript sees it. */
type Schema = {
  types: { user: User; board: Board; pin: Pin; comment: { text: string } };
  mappings: 'board_has_pins' | 'pin_owned_by_board' | 'user_has_boards' | 'user_likes_pins' | 'pin_liked_by_user' | 'user_follows_user';
  keyspaces: 'email' | 'username' | 'ip';
};

const dataDir = process.argv[2] ?? mkdtempSync(join(tmpdir(), 'shardkit-typed-'));
const kit = await ShardKit.open<Schema>({ config: defaultConfig(), dataDir });
try {
  const ann = await kit.objects.create('user', { username: 'ann', email: 'ann@example.com' });
  const board = await kit.objects.create('board', { name: 'Bread' }, { near: ann.id });
  const pin = await kit.objects.create('pin', { details: 'sourdough' }, { near: board.id });
  await kit.mappings.add('user_has_boards', ann.id, board.id);
  await kit.mappings.add('board_has_pins', board.id, pin.id);
  await kit.lookups.put('username', ann.data.username, ann.id);

  const found = await kit.lookups.get('username', 'ann');
  const user = found === undefined ? undefined : await kit.objects.get(found);
  // get() returns any of the schema's types: `type` narrows it.
  if (user?.type === 'user') console.log(`user ${user.data.username} <${user.data.email ?? '-'}>`);
  const { objects } = await kit.join('board_has_pins', board.id, { limit: 10 });
  for (const o of objects) if (o.type === 'pin') console.log(`pin ${o.id}: ${o.data.details}`);
} finally {
  await kit.close();
}
