import { test } from 'node:test';
import assert from 'node:assert/strict';
import { addMove, advanceMove, casMoveState, freezeMove } from '../../src/moves/move-state.js';
import { assertError, createObject, makeApp } from '../http/http-fixture.js';
import { keyOn, sharedHostsMap } from '../kit/shared-hosts-map.js';

test('HTTP: a write held past a freeze\'s budget is 503 SHARD_MOVING with Retry-After: 1; reads of the shard go on', async () => {
  const f = await makeApp();
  try {
    const board = await createObject(f.app, 'board', { v: 1 }, { shard: 2 });
    await casMoveState(f.topology, (m) => addMove(m, { id: 'http-hold', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 1500 }));
    await casMoveState(f.topology, (m) => advanceMove(m, 'http-hold', ['started'], 'copied'));
    // frozenAt ten minutes ahead: the freeze stays in force however slow the machine is, and each
    // write is still held only its budget from when it arrives (freeze-hold.ts), so the outcome
    // does not depend on how soon after the freeze the writes are sent.
    await casMoveState(f.topology, (m) => freezeMove(m, 'http-hold', Date.now() + 600_000));
    const [patch, create] = await Promise.all([
      f.app.inject({ method: 'PATCH', url: `/v1/objects/${board.id}`, payload: { v: 2 } }),
      f.app.inject({ method: 'POST', url: '/v1/objects/pin', payload: { data: {}, near: board.id } }),
    ]);
    for (const res of [patch, create]) {
      assertError(res, 503, 'SHARD_MOVING', res.request?.url ?? '');
      assert.equal(res.headers['retry-after'], '1');
    }
    const get = await f.app.inject({ method: 'GET', url: `/v1/objects/${board.id}` });
    assert.equal(get.statusCode, 200);
    assert.deepEqual((get.json() as { data: unknown }).data, { v: 1 });
    // Other errors carry no Retry-After.
    const missing = await f.app.inject({ method: 'GET', url: '/v1/objects/1' });
    assert.equal(missing.headers['retry-after'], undefined);
  } finally {
    await f.cleanup();
  }
});

test('HTTP: a lookup PUT or DELETE on a mod shard a move carries, held past the budget, is 503 SHARD_MOVING with Retry-After: 1; the GET is answered', async () => {
  const f = await makeApp({ shardMap: sharedHostsMap() });
  try {
    const user = await createObject(f.app, 'user', {}, { shard: 9 });
    const key = keyOn(1, 'http');
    const url = `/v1/lookups/email/${encodeURIComponent(key)}`;
    const put = await f.app.inject({ method: 'PUT', url, payload: { id: user.id } });
    assert.ok(put.statusCode < 300, put.body);
    await casMoveState(f.topology, (m) => addMove(m, { id: 'http-lookups', span: { first: 0, last: 3 }, target: { master: 'MySQL002A', slave: 'MySQL002B' }, holdMs: 1500 }));
    await casMoveState(f.topology, (m) => advanceMove(m, 'http-lookups', ['started'], 'copied', { modShards: true }));
    // frozenAt ten minutes ahead: the freeze stays in force however slow the machine is, and each
    // write is still held only its budget from when it arrives (freeze-hold.ts), so the outcome
    // does not depend on how soon after the freeze the writes are sent.
    await casMoveState(f.topology, (m) => freezeMove(m, 'http-lookups', Date.now() + 600_000));
    const [again, del] = await Promise.all([
      f.app.inject({ method: 'PUT', url, payload: { id: user.id } }),
      f.app.inject({ method: 'DELETE', url }),
    ]);
    for (const res of [again, del]) {
      assertError(res, 503, 'SHARD_MOVING', res.request?.method ?? '');
      assert.equal(res.headers['retry-after'], '1');
    }
    const get = await f.app.inject({ method: 'GET', url });
    assert.equal(get.statusCode, 200, get.body);
  } finally {
    await f.cleanup();
  }
});
