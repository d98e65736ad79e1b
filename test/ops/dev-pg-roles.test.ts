/**
 * Which servers of a PostgreSQL dev cluster `dev up` starts as primaries (pgMasters): a move's
 * target pair serves no range until the switch, and came back from a kill -9 as a standby with no
 * primary, so the mover's copy and every --abort failed read-only (the PostgreSQL operator review).
 * @server-free: only the role rule, over a map; no server starts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pgMasters } from '../../src/ops/dev/dev-postgres.js';
import { ShardMap, addMove, type ShardMapJson } from '../../src/index.js';

const servers = ['PG001A', 'PG002A', 'PG003A', 'PG004A'].map((name) => ({ name }));
const cluster = { serversWithRole: (role: string) => (role === 'master' ? servers : []) } as unknown as Parameters<typeof pgMasters>[0];

test('a move\'s target master and a pair no range names start as primaries; a failed-over master starts as a standby', () => {
  const json: ShardMapJson = {
    version: 3,
    ranges: [
      { range: [0, 3], master: 'PG001A', slave: 'PG001B', open: true },
      // PG002A was failed over: its range is mastered by its old slave, it is the slave now.
      { range: [4, 7], master: 'PG002B', slave: 'PG002A', open: true },
    ],
    modShards: { count: 8, ranges: [{ range: [0, 7], master: 'PG001A', slave: 'PG001B' }] },
  };
  // PG003A/B: the target of a running move; PG004A/B: added, named nowhere.
  const moving = ShardMap.fromJSON(addMove(ShardMap.fromJSON(json), { id: 'm1', span: { first: 0, last: 1 }, target: { master: 'PG003A', slave: 'PG003B' } }));
  assert.deepEqual([...pgMasters(cluster, moving)].sort(), ['PG001A', 'PG002B', 'PG003A', 'PG004A']);
});
