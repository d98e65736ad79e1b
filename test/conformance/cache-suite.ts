/**
 * The Cache conformance suite. Every cache (memory, Redis, memcached) runs it:
 *
 *   runCacheSuite({ name: 'redis', factory: async () => ({ open, cleanup }), supports: { shared: true } })
 *
 * `open()` returns a new client; with `supports.shared` every client of one fixture sees the same
 * data (as processes sharing one Redis would). Tests use their own key prefix, so one server can
 * serve a whole file.
 */
import { describe, test, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { isShardKitError } from '../../src/errors.js';
import type { Cache } from '../../src/cache/index.js';

export interface CacheFixture {
  open(): Cache | Promise<Cache>;
  cleanup?(): Promise<void>;
}

export interface CacheSuiteOptions {
  name: string;
  factory: () => CacheFixture | Promise<CacheFixture>;
  supports?: { shared?: boolean };
}

/** Polls until `key` reads as absent; fails after `ms` (a hang guard, not a speed check). */
async function untilGone(cache: Cache, key: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const [v] = await cache.getMany([key]);
    if (v === undefined) return;
    await sleep(200);
  }
  assert.fail(`${key} was still cached ${ms} ms after its 1-second TTL`);
}

export function runCacheSuite({ name, factory, supports = {} }: CacheSuiteOptions): void {
  describe(`Cache conformance: ${name}`, () => {
    let fixture: CacheFixture;
    let opened: Cache[] = [];
    let p = '';
    const open = async (): Promise<Cache> => {
      const c = await fixture.open();
      opened.push(c);
      return c;
    };

    beforeEach(async () => {
      fixture = await factory();
      opened = [];
      p = `t:${randomUUID().slice(0, 8)}:`;
    });
    afterEach(async () => {
      for (const c of opened) await c.close();
      await fixture.cleanup?.();
    });

    test('missing keys read as undefined', async () => {
      const cache = await open();
      assert.deepEqual(await cache.getMany([`${p}a`, `${p}b`]), [undefined, undefined]);
    });

    test('set then get returns values in request order, undefined for the missing ones', async () => {
      const cache = await open();
      await cache.setMany([[`${p}a`, '1'], [`${p}b`, '2'], [`${p}c`, '']], 60);
      assert.deepEqual(await cache.getMany([`${p}c`, `${p}x`, `${p}a`, `${p}b`, `${p}a`]), ['', undefined, '1', '2', '1']);
    });

    test('set overwrites', async () => {
      const cache = await open();
      await cache.setMany([[`${p}a`, 'old']], 60);
      await cache.setMany([[`${p}a`, 'new']], 60);
      assert.deepEqual(await cache.getMany([`${p}a`]), ['new']);
    });

    test('delete removes the keys given, leaves the others, and ignores absent keys', async () => {
      const cache = await open();
      await cache.setMany([[`${p}a`, '1'], [`${p}b`, '2'], [`${p}c`, '3']], 60);
      await cache.deleteMany([`${p}a`, `${p}c`, `${p}never`]);
      assert.deepEqual(await cache.getMany([`${p}a`, `${p}b`, `${p}c`]), [undefined, '2', undefined]);
    });

    test('empty batches are no-ops', async () => {
      const cache = await open();
      assert.deepEqual(await cache.getMany([]), []);
      await cache.setMany([], 60);
      await cache.deleteMany([]);
    });

    test('many keys in one call', async () => {
      const cache = await open();
      const keys = Array.from({ length: 600 }, (_, i) => `${p}k${i}`);
      await cache.setMany(keys.map((k, i) => [k, `v${i}`]), 60);
      const got = await cache.getMany([...keys].reverse());
      assert.deepEqual(got, keys.map((_, i) => `v${keys.length - 1 - i}`));
      await cache.deleteMany(keys.filter((_, i) => i % 2 === 0));
      const after = await cache.getMany(keys);
      assert.deepEqual(after, keys.map((_, i) => (i % 2 === 0 ? undefined : `v${i}`)));
    });

    test('an entry expires after its TTL; a longer-lived one stays', async () => {
      const cache = await open();
      await cache.setMany([[`${p}short`, 's']], 1);
      await cache.setMany([[`${p}long`, 'l']], 3600);
      await untilGone(cache, `${p}short`);
      assert.deepEqual(await cache.getMany([`${p}long`]), ['l']);
    });

    test('unicode values round-trip exactly', async () => {
      const cache = await open();
      const values = ['ünïcödé', '日本語のテキスト', '😀👍🏽 family: 👨‍👩‍👧', 'e\u0301 combining', 'line\nbreak\r\nand\ttab', '{"json":"\\u0000"}', '\u0000nul'];
      await cache.setMany(values.map((v, i) => [`${p}u${i}`, v]), 60);
      assert.deepEqual(await cache.getMany(values.map((_, i) => `${p}u${i}`)), values);
    });

    test('large values round-trip exactly', async () => {
      const cache = await open();
      // 512 KiB: well under memcached's default 1 MiB item size.
      const big = JSON.stringify({ text: 'x'.repeat(256 * 1024), more: 'é'.repeat(128 * 1024) });
      await cache.setMany([[`${p}big`, big], [`${p}small`, 's']], 60);
      const [got, small] = await cache.getMany([`${p}big`, `${p}small`]);
      assert.equal(got?.length, big.length);
      assert.ok(got === big, 'large value changed on the way');
      assert.equal(small, 's');
    });

    test('a TTL that is not a positive integer is INVALID_ARGUMENT', async () => {
      const cache = await open();
      for (const ttl of [0, -1, 1.5, Number.NaN]) {
        await assert.rejects(cache.setMany([[`${p}a`, '1']], ttl), (err) => isShardKitError(err, 'INVALID_ARGUMENT'));
      }
    });

    test('close: later calls fail with CLOSED; closing twice is fine', async () => {
      const cache = await open();
      await cache.setMany([[`${p}a`, '1']], 60);
      await cache.close();
      await cache.close();
      await assert.rejects(cache.getMany([`${p}a`]), (err) => isShardKitError(err, 'CLOSED'));
      await assert.rejects(cache.setMany([[`${p}a`, '1']], 60), (err) => isShardKitError(err, 'CLOSED'));
      await assert.rejects(cache.deleteMany([`${p}a`]), (err) => isShardKitError(err, 'CLOSED'));
    });

    if (supports.shared) {
      test('clients of one server share entries, and a delete by one is seen by the other', async () => {
        const a = await open();
        const b = await open();
        await a.setMany([[`${p}s`, 'shared']], 60);
        assert.deepEqual(await b.getMany([`${p}s`]), ['shared']);
        await b.deleteMany([`${p}s`]);
        assert.deepEqual(await a.getMany([`${p}s`]), [undefined]);
      });
    }
  });
}
