import { test } from 'node:test';
import assert from 'node:assert/strict';
import { defaultConfig, parseConfig, resolveTickets, ShardKitError } from '../../src/index.js';

const two = { servers: [{ name: 't1', port: 3307 }, { name: 't2', port: 3308 }], sequences: ['photos', 'accounts', { name: 'offline_tasks', table: 'tickets_offline' }] };

function code(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ShardKitError, String(err));
    return err.code;
  }
  return assert.fail('expected an error');
}

test('defaults: increment = number of servers, offsets 1..N in order, table = sequence name', () => {
  const r = resolveTickets(two);
  assert.equal(r.increment, 2);
  assert.deepEqual(r.servers.map((s) => [s.name, s.offset, s.host, s.port, s.user]), [['t1', 1, '127.0.0.1', 3307, 'root'], ['t2', 2, '127.0.0.1', 3308, 'root']]);
  assert.deepEqual(r.sequences, [{ name: 'photos', table: 'photos' }, { name: 'accounts', table: 'accounts' }, { name: 'offline_tasks', table: 'tickets_offline' }]);
  assert.equal(r.database, 'tickets');
  assert.equal(r.mode, 'classic');
  assert.equal(r.segment.prefetchAt, 0.1);
  assert.deepEqual(resolveTickets(r), r, 'resolving is idempotent');
});

test('room to grow: increment may exceed the server count, offsets are explicit', () => {
  const r = resolveTickets({ ...two, increment: 4, servers: [{ name: 't1', offset: 1 }, { name: 't3', offset: 3 }] });
  assert.deepEqual(r.servers.map((s) => s.offset), [1, 3]);
  assert.equal(r.increment, 4);
});

test('configs that would issue duplicates or break SQL are INVALID_CONFIG', () => {
  const bad: unknown[] = [
    { ...two, servers: [{ name: 't1', offset: 1 }, { name: 't2', offset: 1 }] },
    { ...two, increment: 1 },
    { ...two, servers: [{ name: 't1', offset: 3 }, { name: 't2' }] },
    { ...two, servers: [{ name: 't1' }, { name: 't1' }] },
    { ...two, sequences: ['photos', 'photos'] },
    { ...two, sequences: ['photos', { name: 'accounts', table: 'photos' }] },
    { ...two, sequences: ['Photos'] },
    { ...two, sequences: ['x`; DROP TABLE y'] },
    { ...two, database: 'tic-kets' },
    { ...two, sequences: [] },
    { ...two, servers: [] },
    { ...two, segment: { minSize: 100, maxSize: 10 } },
    { ...two, unknown: 1 },
  ];
  for (const c of bad) assert.equal(code(() => resolveTickets(c as never)), 'INVALID_CONFIG', JSON.stringify(c));
});

test('the main config file validates its tickets section', () => {
  const base = defaultConfig();
  const ok = parseConfig({ ...base, tickets: two });
  assert.equal(ok.tickets?.servers.length, 2);
  assert.equal(code(() => parseConfig({ ...base, tickets: { ...two, increment: 1 } })), 'INVALID_CONFIG');
  assert.equal(code(() => parseConfig({ ...base, tickets: { ...two, servers: [{ name: 't1', port: 0 }] } })), 'INVALID_CONFIG');
});
