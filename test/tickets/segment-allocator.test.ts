import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ShardKitError } from '../../src/index.js';
import { SegmentAllocator } from '../../src/tickets/index.js';
import type { ReservedBlock } from '../../src/tickets/ticket-server.js';
import type { SegmentConfig } from '../../src/tickets/tickets-config.js';

const SEGMENT: SegmentConfig = { initialSize: 100, minSize: 10, maxSize: 10_000, prefetchAt: 0.1, targetMs: 1000 };

/** Models a ticket server row: the newest reserved ID, advanced by count × step per reservation. */
class FakeServer {
  calls: number[] = [];
  failing = false;
  pending: Array<() => void> = [];
  hold = false;
  constructor(public top: bigint, readonly step = 2n, readonly name = 'fake') {}
  reserve = (count: number): Promise<ReservedBlock> => {
    this.calls.push(count);
    if (this.failing) return Promise.reject(new ShardKitError('TICKET_SERVERS_UNAVAILABLE', 'down'));
    const span = BigInt(count) * this.step;
    const first = this.top + this.step;
    this.top += span;
    const block = { server: this.name, first, step: this.step, count, last: this.top };
    if (!this.hold) return Promise.resolve(block);
    return new Promise((resolve) => this.pending.push(() => resolve(block)));
  };
  release(): void {
    for (const p of this.pending.splice(0)) p();
  }
}

test('hands out the reserved block in order, step by step, then the next block', async () => {
  const server = new FakeServer(1n);
  const a = new SegmentAllocator(server.reserve, { ...SEGMENT, initialSize: 3, minSize: 1 }, { prefetch: false });
  const ids = [];
  for (let i = 0; i < 7; i++) ids.push(await a.next());
  assert.deepEqual(ids, [3n, 5n, 7n, 9n, 11n, 13n, 15n]);
  assert.ok(ids.every((id) => id % 2n === 1n), 'every ID keeps the server residue');
});

test('the next block is fetched in the background once 10% of the current one is used', async () => {
  const server = new FakeServer(0n);
  const a = new SegmentAllocator(server.reserve, SEGMENT);
  await a.next();
  assert.equal(server.calls.length, 1);
  for (let i = 1; i < 9; i++) await a.next();
  assert.equal(server.calls.length, 1, 'no prefetch before 10% is used');
  await a.next();
  assert.equal(server.calls.length, 2, '10th of 100 IDs triggers the prefetch');
  await new Promise((r) => setImmediate(r));
  assert.equal(a.available, 90 + server.calls[1]!);
  for (let i = 0; i < 200; i++) await a.next();
  assert.ok(server.calls.length >= 3);
});

test('K doubles while blocks last less than targetMs, up to maxSize, and halves when one lasted over 2x', async () => {
  let now = 1_000_000;
  const server = new FakeServer(0n, 1n);
  const a = new SegmentAllocator(server.reserve, { ...SEGMENT, maxSize: 800 }, { now: () => now, prefetch: false });
  for (let i = 0; i < 3000; i++) await a.next();
  assert.deepEqual(server.calls.slice(0, 5), [100, 200, 400, 800, 800]);
  // Demand drops: each block now lasts 3 × targetMs.
  const before = server.calls.length;
  for (let round = 0; round < 4; round++) {
    now += 3 * SEGMENT.targetMs;
    for (let i = a.available; i > 0; i--) await a.next();
    await a.next();
  }
  assert.deepEqual(server.calls.slice(before), [400, 200, 100, 50]);
  // Steady demand (between 1x and 2x targetMs): K stays.
  now += 1.5 * SEGMENT.targetMs;
  for (let i = a.available; i > 0; i--) await a.next();
  await a.next();
  assert.equal(server.calls.at(-1), 50);
});

test('K never goes below minSize and a batch larger than K gets a block of its own size', async () => {
  let now = 0;
  const server = new FakeServer(0n, 1n);
  const a = new SegmentAllocator(server.reserve, { ...SEGMENT, initialSize: 20, minSize: 10 }, { now: () => now, prefetch: false });
  await a.next();
  for (let i = 0; i < 5; i++) {
    now += 10 * SEGMENT.targetMs;
    for (let k = a.available; k > 0; k--) await a.next();
    await a.next();
  }
  assert.equal(Math.min(...server.calls), 10);
  const batch = await a.take(5000);
  assert.equal(new Set(batch).size, 5000);
  assert.ok(server.calls.at(-1)! >= 5000 - 10);
});

test('concurrent callers on an empty allocator share one fetch and never get the same ID', async () => {
  const server = new FakeServer(7n, 3n);
  server.hold = true;
  const a = new SegmentAllocator(server.reserve, { ...SEGMENT, initialSize: 50 });
  const all = Array.from({ length: 500 }, () => a.next());
  const batches = Array.from({ length: 20 }, () => a.take(37));
  while (server.pending.length > 0 || server.calls.length < 2) {
    server.release();
    await new Promise((r) => setImmediate(r));
    if (server.calls.length > 100) break;
  }
  for (let i = 0; i < 50; i++) {
    server.release();
    await new Promise((r) => setImmediate(r));
  }
  const ids = [...(await Promise.all(all)), ...(await Promise.all(batches)).flat()];
  assert.equal(ids.length, 500 + 20 * 37);
  assert.equal(new Set(ids).size, ids.length, 'no duplicates');
  assert.ok(ids.every((id) => id % 3n === 7n % 3n));
  assert.ok(ids.every((id) => id > 7n && id <= server.top), 'every ID lies in a reserved block');
});

test('a dropped (crashed) allocator only skips IDs: a new one continues above everything reserved', async () => {
  const server = new FakeServer(0n);
  const seen = new Set<bigint>();
  for (let crash = 0; crash < 5; crash++) {
    const a = new SegmentAllocator(server.reserve, { ...SEGMENT, initialSize: 40 });
    for (let i = 0; i < 55; i++) {
      const id = await a.next();
      assert.ok(!seen.has(id), `duplicate ${id}`);
      seen.add(id);
    }
    // No close(): the process "dies" with its blocks.
  }
  assert.equal(seen.size, 5 * 55);
});

test('servers down: serving continues from memory; once memory is empty the error reaches the caller; recovery resumes', async () => {
  const server = new FakeServer(0n, 1n);
  const a = new SegmentAllocator(server.reserve, { ...SEGMENT, initialSize: 20, minSize: 20, maxSize: 20 });
  await a.next();
  server.failing = true;
  const got: bigint[] = [];
  for (let i = 0; i < 19; i++) got.push(await a.next());
  assert.equal(got.length, 19, 'the rest of the block is still handed out');
  await assert.rejects(a.next(), (err: unknown) => err instanceof ShardKitError && err.code === 'TICKET_SERVERS_UNAVAILABLE');
  await assert.rejects(a.take(3), (err: unknown) => err instanceof ShardKitError && err.code === 'TICKET_SERVERS_UNAVAILABLE');
  server.failing = false;
  const after = await a.take(30);
  assert.equal(new Set([...got, ...after]).size, 49);
  assert.ok(after[0]! > got.at(-1)!);
});

test('after close(), calls fail with CLOSED', async () => {
  const server = new FakeServer(0n);
  const a = new SegmentAllocator(server.reserve, SEGMENT);
  await a.next();
  a.close();
  await assert.rejects(a.take(5), (err: unknown) => err instanceof ShardKitError && err.code === 'CLOSED');
});
