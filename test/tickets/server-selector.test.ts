import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/index.js';
import { ServerSelector } from '../../src/tickets/index.js';

const servers = [{ name: 'a' }, { name: 'b' }, { name: 'c' }];

test('round robin: consecutive requests start at consecutive servers', async () => {
  const sel = new ServerSelector(servers, { retryAfterMs: 1000, start: 0 });
  const used: string[] = [];
  for (let i = 0; i < 6; i++) used.push(await sel.run(async (s) => s.name));
  assert.deepEqual(used, ['a', 'b', 'c', 'a', 'b', 'c']);
});

test('a failing server is skipped, the request goes to the next one, and it stays out until retryAfterMs', async () => {
  let now = 0;
  const sel = new ServerSelector(servers, { retryAfterMs: 1000, now: () => now, start: 0 });
  let bDown = true;
  const used: string[] = [];
  const call = () => sel.run(async (s) => {
    if (s.name === 'b' && bDown) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    used.push(s.name);
    return s.name;
  });
  for (let i = 0; i < 6; i++) await call();
  assert.deepEqual(used, ['a', 'c', 'a', 'c', 'a', 'c'], 'b failed once (its request went to c), then the others share its load');
  assert.deepEqual(sel.status().map((s) => s.up), [true, false, true]);
  assert.match(sel.status()[1]!.lastError!, /ECONNREFUSED/);
  // Retry time reached but b still down: exactly one request probes it and moves on.
  now = 1000;
  used.length = 0;
  for (let i = 0; i < 4; i++) await call();
  assert.equal(used.length, 4);
  assert.ok(!used.includes('b'));
  // b is back: the next probe succeeds and b rejoins the rotation.
  bDown = false;
  now = 2500;
  used.length = 0;
  for (let i = 0; i < 6; i++) await call();
  assert.equal(used[0], 'b', 'the due probe goes first');
  assert.equal(used.filter((n) => n === 'b').length, 2);
  assert.ok(sel.status().every((s) => s.up));
});

test('while one request probes a down server, concurrent requests do not also wait on it', () => {
  let now = 0;
  const sel = new ServerSelector(servers, { retryAfterMs: 100, now: () => now, start: 0 });
  sel.markDown(servers[0]!, new Error('x'));
  now = 200;
  const first = sel.candidates().map((s) => s.name);
  const second = sel.candidates().map((s) => s.name);
  assert.equal(first[0], 'a');
  assert.ok(!second.includes('a'));
});

test('all servers failing is TICKET_SERVERS_UNAVAILABLE naming each one; then each request makes one last attempt, on the server down longest', async () => {
  let now = 0;
  const sel = new ServerSelector(servers, { retryAfterMs: 1000, now: () => now, start: 0 });
  let calls = 0;
  const fail = () => sel.run(async (s): Promise<string> => {
    calls++;
    throw new Error(`${s.name} is gone`);
  });
  await assert.rejects(fail(), (err: unknown) => {
    assert.ok(err instanceof ShardKitError);
    assert.equal(err.code, 'TICKET_SERVERS_UNAVAILABLE');
    assert.equal(err.status, 503);
    for (const n of ['a', 'b', 'c']) assert.match(err.message, new RegExp(`${n}: ${n} is gone`));
    return true;
  });
  assert.equal(calls, 3);
  now = 10;
  const tried: string[] = [];
  await assert.rejects(sel.run(async (s): Promise<string> => {
    tried.push(s.name);
    throw new Error('still gone');
  }), (err: unknown) => err instanceof ShardKitError && err.code === 'TICKET_SERVERS_UNAVAILABLE' && /retried later/.test(err.message));
  assert.deepEqual(tried, ['a'], 'only one server is contacted while all wait for their retry time');
  assert.equal(await sel.run(async (s) => s.name), 'b', 'b has now been down longest; its success brings it back');
  assert.ok(sel.isUp(servers[1]!));
});

test('a client error (4xx) is passed through without marking the server down', async () => {
  const sel = new ServerSelector(servers, { retryAfterMs: 1000, start: 0 });
  await assert.rejects(sel.run(async () => {
    throw new ShardKitError('INVALID_ARGUMENT', 'bad');
  }), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_ARGUMENT');
  assert.ok(sel.status().every((s) => s.up));
});
