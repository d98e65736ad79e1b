import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { importCycles, moduleOf, readImportGraph } from './import-graph.js';

/**
 * Data flows one way (../shared/STYLE.md, README "Layout"):
 *   errors <- ids <- topology <- storage <- config <- kit (ShardKit) <- http / ops <- cli
 * with cache, tickets and widecolumn as leaves beside storage, and ops beside http. A module may
 * import only what this table lists; the test reads src/ as text, so it runs without servers.
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  errors: [],
  // Small helpers with no shardkit concern (the seeded PRNG); add it to a module's list to use one.
  util: [],
  ids: ['errors'],
  topology: ['errors', 'ids'],
  cache: ['errors'],
  storage: ['errors', 'ids', 'topology'],
  tickets: ['errors', 'ids'],
  // The MyRocks engine (widecolumn/myrocks) runs on the MariaDB host pools and the shard map.
  widecolumn: ['errors', 'ids', 'topology', 'storage'],
  // config composes the schemas the modules below it own.
  config: ['errors', 'ids', 'topology', 'cache', 'storage', 'tickets', 'widecolumn'],
  kit: ['errors', 'ids', 'topology', 'cache', 'storage', 'config'],
  http: ['util', 'errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'tickets', 'widecolumn'],
  // moves runs beside the service like ops: it edits the map and copies shards between hosts.
  moves: ['errors', 'ids', 'topology', 'storage'],
  ops: ['errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'tickets', 'moves'],
  // migrate (shardkit migrate) copies data in from an embedded store or a table: beside the service, like ops.
  migrate: ['errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'ops'],
  cli: ['util', 'errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'http', 'ops', 'tickets', 'widecolumn', 'moves', 'migrate'],
  index: ['errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'http', 'tickets', 'widecolumn', 'moves'],
};

/**
 * Pluggable concerns keep one folder per implementation (`storage/mysql`, `topology/etcd`): an
 * implementation may use its concern's root files and the shared folders named here, never
 * another implementation's folder. What two implementations share lives at the concern's root.
 */
const SHARED_FOLDERS: Record<string, readonly string[]> = {
  storage: ['sql'],
  topology: [],
  cache: [],
  moves: [],
  migrate: [],
  tickets: [],
  // ops/mariadb and ops/postgres manage local servers; ops/dev (the dev cluster) builds on both,
  // and ops/failover works on dev clusters as well as fleets: they are libraries the ops
  // features share, not alternative implementations; ops/heal (the supervisor) runs ops/failover's
  // emergency failover.
  ops: ['mariadb', 'postgres', 'dev', 'failover'],
};

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Upward or sideways imports: `from -> to` for each import the layering forbids. */
export function layerViolations(edges: Map<string, string[]>): string[] {
  const out: string[] = [];
  for (const [from, targets] of edges) {
    const m = moduleOf(from);
    const allowed = MAY_IMPORT[m];
    for (const to of targets) {
      const n = moduleOf(to);
      if (n === m) {
        if (SHARED_FOLDERS[m] === undefined) continue;
        const impl = (f: string) => f.split('/').length > 2 ? f.split('/')[1]! : undefined;
        const a = impl(from);
        const b = impl(to);
        const shared = SHARED_FOLDERS[m] ?? [];
        if (a !== undefined && b !== undefined && a !== b && !shared.includes(b) && !shared.includes(a)) out.push(`${from} -> ${to} (implementation folders of ${m} are independent)`);
        else if (a !== undefined && b !== undefined && shared.includes(a) && !shared.includes(b)) out.push(`${from} -> ${to} (shared ${m}/${a} must not know an implementation)`);
        continue;
      }
      if (allowed === undefined) out.push(`${from}: module ${m} has no entry in MAY_IMPORT`);
      else if (!allowed.includes(n)) out.push(`${from} -> ${to} (${m} may not import ${n})`);
    }
  }
  return out.sort();
}

test('src/ imports point one way: no module imports a layer above it or beside it', () => {
  const graph = readImportGraph(SRC);
  assert.ok(graph.files.length > 50, 'the source tree was read');
  assert.deepEqual(layerViolations(graph.edges), []);
});

test('src/ has no import circle', () => {
  assert.deepEqual(importCycles(readImportGraph(SRC)), []);
});

test('the checks catch what they are for: an upward import and a circle in a made-up graph', () => {
  const edges = new Map<string, string[]>([
    ['storage/mysql/index.ts', ['kit/backend-factory.ts', 'storage/shard-backend.ts']],
    ['storage/postgres/x.ts', ['storage/mysql/index.ts']],
    ['storage/sql/core.ts', ['storage/mysql/index.ts']],
    ['storage/mysql/y.ts', ['storage/sql/core.ts']],
    ['kit/backend-factory.ts', ['storage/mysql/index.ts']],
    ['storage/shard-backend.ts', []],
  ]);
  assert.deepEqual(layerViolations(edges), [
    'storage/mysql/index.ts -> kit/backend-factory.ts (storage may not import kit)',
    'storage/postgres/x.ts -> storage/mysql/index.ts (implementation folders of storage are independent)',
    'storage/sql/core.ts -> storage/mysql/index.ts (shared storage/sql must not know an implementation)',
  ]);
  const files = [...edges.keys()];
  assert.deepEqual(importCycles({ files, edges }), [['kit/backend-factory.ts', 'storage/mysql/index.ts']]);
});
