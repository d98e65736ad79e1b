import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import { importCycles, moduleOf, readImportGraph, specifiers, templateTargets } from './import-graph.js';

/**
 * Data flows one way (../shared/STYLE.md, README "Layout"):
 *   errors <- ids <- topology <- storage <- config <- kit (ShardKit) <- http / ops <- cli
 * with cache, tickets and widecolumn as leaves beside storage, and ops beside http. A module may
 * import only what this table lists; the test reads src/ as text, so it runs without servers.
 */
const MAY_IMPORT: Record<string, readonly string[]> = {
  errors: [],
  // Small helpers with no shardkit concern (the seeded PRNG, loading an optional peer
  // dependency with a MISSING_DEPENDENCY error); add it to a module's list to use one.
  util: ['errors'],
  ids: ['errors'],
  topology: ['errors', 'ids'],
  cache: ['util', 'errors'],
  storage: ['util', 'errors', 'ids', 'topology'],
  tickets: ['util', 'errors', 'ids'],
  // The MyRocks engine (widecolumn/myrocks) runs on the MariaDB host pools and the shard map.
  widecolumn: ['util', 'errors', 'ids', 'topology', 'storage'],
  // config composes the schemas the modules below it own.
  config: ['errors', 'ids', 'topology', 'cache', 'storage', 'tickets', 'widecolumn'],
  kit: ['errors', 'ids', 'topology', 'cache', 'storage', 'config'],
  http: ['util', 'errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'tickets', 'widecolumn'],
  // moves runs beside the service like ops: it edits the map and copies shards between hosts.
  moves: ['errors', 'ids', 'topology', 'storage'],
  // util: the Parquet file writer the analytics export shares with the wide-column export.
  ops: ['util', 'errors', 'ids', 'topology', 'cache', 'storage', 'config', 'kit', 'tickets', 'moves'],
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

/**
 * Another module's inside: a module may import another's root files (its interface) and an
 * implementation folder's index.ts (its entry: the factory), nothing deeper. The crossings that
 * existed when the rule came (issue 27: 30 of them) are gone; an exception added here must say why.
 */
const KNOWN_CROSSINGS: ReadonlySet<string> = new Set<string>([]);

/** Imports of another module's inside (past its root files and its folders' index.ts). */
export function insideImports(edges: Map<string, string[]>, known: ReadonlySet<string> = new Set()): string[] {
  const out: string[] = [];
  for (const [from, targets] of edges) {
    for (const to of targets) {
      if (moduleOf(from) === moduleOf(to)) continue;
      const parts = to.split('/');
      const entry = parts.length === 1 || parts.length === 2 || (parts.length === 3 && parts[2] === 'index.ts');
      const edge = `${from} -> ${to}`;
      if (!entry && !known.has(edge)) out.push(edge);
    }
  }
  return out.sort();
}

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

test("no module imports another's implementation folders: only its root files and a folder's index.ts", () => {
  const graph = readImportGraph(SRC);
  assert.deepEqual(insideImports(graph.edges, KNOWN_CROSSINGS), []);
  const all = new Set(insideImports(graph.edges));
  assert.deepEqual([...KNOWN_CROSSINGS].filter((e) => !all.has(e)), [], 'crossings that are gone: take them off KNOWN_CROSSINGS');
});

test('the inside check and template import() are read: a made-up tree', () => {
  const edges = new Map<string, string[]>([
    ['widecolumn/myrocks/x.ts', ['storage/mysql/mysql-host-pool.ts', 'storage/mysql/index.ts', 'storage/shard-backend.ts', 'widecolumn/engine.ts']],
  ]);
  assert.deepEqual(insideImports(edges), ['widecolumn/myrocks/x.ts -> storage/mysql/mysql-host-pool.ts']);
  const files = ['kit/f.ts', 'storage/mysql/index.ts', 'storage/mysql/mysql-backend.ts', 'storage/sqlite/index.ts'];
  assert.deepEqual(templateTargets('/r', 'kit/f.ts', '../storage/${kind}/index.js', files), ['storage/mysql/index.ts', 'storage/sqlite/index.ts']);
  assert.deepEqual(templateTargets('/r', 'kit/f.ts', '../storage/mysql/${name}.js', files), ['storage/mysql/index.ts', 'storage/mysql/mysql-backend.ts']);
  assert.deepEqual(specifiers('const m = await import(`../storage/${k}/index.js`);'), ['../storage/${k}/index.js']);
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
