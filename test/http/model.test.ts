/**
 * A seeded random walk over the HTTP API, checked against an in-memory model of what
 * docs/http-api.md promises: objects (create, get, multi-get, merge patches with If-Match /
 * If-None-Match, soft and hard deletes with If-Match), mappings (upserts, removes, every page of
 * both orders, the join, counts) and lookups with awkward keys in both URL forms.
 * SHARDKIT_MODEL_SEED=<n> replays a run; SHARDKIT_MODEL_OPS=<n> makes it longer.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions } from 'fastify';
import { makeApp } from './http-fixture.js';
import { mulberry32 } from '../../src/util/prng.js';

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

/** RFC 7396, as the docs state it. */
function mergePatch(target: Json, patch: Json): Json {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const out: Obj = target !== null && typeof target === 'object' && !Array.isArray(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k] ?? null, v);
  }
  return out;
}

interface ModelObject {
  id: string;
  type: string;
  state: 'live' | 'soft' | 'gone';
  data: Obj;
  etag: string;
  /** Every ETag this object had, for stale If-Match headers. */
  seen: string[];
}

const KEYS = ['.', '..', 'a/b', '%41', 'A', 'a', 'a ', ' ', '+', 'plus+sign', 'q?x=1&y', '#frag', 'é', 'e\u0301', '🦄', "'; DROP TABLE x; --", '../../etc/passwd', 'k'.repeat(1024), '\u0000nul', 'tab\there'];
const MAPPINGS = [
  { name: 'board_has_pins', from: 'board', to: 'pin' },
  { name: 'user_likes_pins', from: 'user', to: 'pin' },
];

test('model: a seeded random walk over objects, mappings and lookups matches the documented contract', async (t) => {
  const seed = Number(process.env.SHARDKIT_MODEL_SEED ?? Math.floor(Math.random() * 2 ** 31));
  const ops = Number(process.env.SHARDKIT_MODEL_OPS ?? 500);
  console.log(`model test seed ${seed} (replay: SHARDKIT_MODEL_SEED=${seed})`);
  const random = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const chance = (p: number) => random() < p;
  const int = (n: number) => Math.floor(random() * n);

  const f = await makeApp();
  t.after(() => f.cleanup());
  const app: FastifyInstance = f.app;
  const objects: ModelObject[] = [];
  const mappings = new Map<string, Map<string, number>>(); // `${name} ${from}` -> to -> sequence
  const lookups = new Map<string, string>(); // `${keyspace} ${key}` -> id
  const log: string[] = [];

  async function call(what: string, request: InjectOptions) {
    const res = await app.inject(request);
    log.push(`${what}: ${request.method} ${String(request.url).slice(0, 120)} -> ${res.statusCode}`);
    if (log.length > 30) log.shift();
    return res;
  }
  const fail = (msg: string): never => assert.fail(`${msg}\nseed ${seed}; last requests:\n${log.join('\n')}`);
  const expectStatus = (res: { statusCode: number; body: string }, status: number, what: string) => {
    if (res.statusCode !== status) fail(`${what}: expected ${status}, got ${res.statusCode} ${res.body.slice(0, 300)}`);
  };

  function randomValue(depth = 0): Json {
    switch (int(depth > 2 ? 4 : 6)) {
      case 0: return int(2) === 0 ? int(1000) : (random() - 0.5) * 1e6;
      case 1: return pick(['', 'x', 'héllo', '🦄', '"quoted"', 'line\nbreak']);
      case 2: return chance(0.5);
      case 3: return pick([Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER, 0, -1, 1.5e300]);
      case 4: return Array.from({ length: int(3) }, () => randomValue(depth + 1));
      default: return randomObject(depth + 1);
    }
  }
  function randomObject(depth = 0): Obj {
    const out: Obj = {};
    for (let i = int(4); i > 0; i--) out[pick(['a', 'b', 'c', 'name', 'nested', 'n'])] = randomValue(depth);
    return out;
  }
  function randomPatch(): Obj {
    const out: Obj = {};
    for (let i = 1 + int(3); i > 0; i--) out[pick(['a', 'b', 'c', 'name', 'nested', 'n', 'z'])] = chance(0.3) ? null : chance(0.3) ? randomObject(1) : randomValue(1);
    return out;
  }
  const live = () => objects.filter((o) => o.state === 'live');
  const ofType = (type: string) => objects.filter((o) => o.type === type);

  function checkObjectBody(body: { id: string; type: string; data: unknown }, o: ModelObject, what: string) {
    if (body.id !== o.id || body.type !== o.type) fail(`${what}: wrong object ${body.id}`);
    try {
      assert.deepEqual(body.data, o.data);
    } catch {
      fail(`${what}: data ${JSON.stringify(body.data).slice(0, 200)} != model ${JSON.stringify(o.data).slice(0, 200)}`);
    }
  }

  async function create() {
    const type = pick(['pin', 'board', 'user']);
    const data = randomObject();
    const near = chance(0.3) ? live()[0] : undefined;
    const res = await call('create', { method: 'POST', url: `/v1/objects/${type}`, payload: { data, ...(near ? { near: near.id } : {}) } });
    expectStatus(res, 201, 'create');
    const body = res.json() as { id: string; type: string; data: unknown };
    const etag = String(res.headers.etag);
    const o: ModelObject = { id: body.id, type, state: 'live', data: JSON.parse(JSON.stringify(data)) as Obj, etag, seen: [etag] };
    checkObjectBody(body, o, 'create');
    objects.push(o);
  }

  async function get() {
    const o = pick(objects);
    const conditional = chance(0.3) ? pick([o.etag, `W/${o.etag}`, '"nope"', ...o.seen]) : undefined;
    const res = await call('get', { method: 'GET', url: `/v1/objects/${o.id}`, ...(conditional ? { headers: { 'if-none-match': conditional } } : {}) });
    if (o.state !== 'live') return expectStatus(res, 404, 'get deleted');
    const matches = conditional !== undefined && conditional.replace(/^W\//, '') === o.etag;
    if (matches) return expectStatus(res, 304, 'get if-none-match');
    expectStatus(res, 200, 'get');
    if (res.headers.etag !== o.etag) fail(`get: etag ${res.headers.etag} != last written ${o.etag}`);
    checkObjectBody(res.json(), o, 'get');
  }

  async function multiGet() {
    const chosen = Array.from({ length: 1 + int(8) }, () => pick(objects));
    const res = await call('multi-get', { method: 'GET', url: `/v1/objects?ids=${chosen.map((o) => o.id).join(',')}` });
    expectStatus(res, 200, 'multi-get');
    const got = (res.json() as { objects: Array<{ id: string; type: string; data: unknown }> }).objects;
    const want = chosen.filter((o) => o.state === 'live');
    if (got.length !== want.length) fail(`multi-get: ${got.length} objects, model ${want.length}`);
    got.forEach((b, i) => checkObjectBody(b, want[i]!, 'multi-get'));
  }

  /** An If-Match header: the current tag, a stale one, `*`, a weak one, or none. */
  function ifMatchFor(o: ModelObject): string | undefined {
    switch (int(5)) {
      case 0: return o.etag;
      case 1: return pick(o.seen);
      case 2: return '*';
      case 3: return `W/${o.etag}`;
      default: return undefined;
    }
  }
  const passes = (o: ModelObject, ifMatch: string | undefined) => ifMatch === undefined || ifMatch === '*' || ifMatch === o.etag;

  async function patch() {
    const o = pick(objects);
    const ifMatch = ifMatchFor(o);
    const p = randomPatch();
    const res = await call('patch', { method: 'PATCH', url: `/v1/objects/${o.id}`, headers: { 'content-type': chance(0.5) ? 'application/merge-patch+json' : 'application/json', ...(ifMatch ? { 'if-match': ifMatch } : {}) }, payload: JSON.stringify(p) });
    if (o.state !== 'live') return expectStatus(res, 404, 'patch deleted');
    if (!passes(o, ifMatch)) {
      expectStatus(res, 412, `patch with If-Match ${ifMatch}`);
      return;
    }
    expectStatus(res, 200, 'patch');
    o.data = mergePatch(o.data, p) as Obj;
    o.etag = String(res.headers.etag);
    o.seen.push(o.etag);
    checkObjectBody(res.json(), o, 'patch');
  }

  async function remove() {
    const o = pick(objects);
    const hard = chance(0.4);
    const ifMatch = chance(0.5) ? ifMatchFor(o) : undefined;
    const res = await call('delete', { method: 'DELETE', url: `/v1/objects/${o.id}${hard ? '?hard=true' : ''}`, ...(ifMatch ? { headers: { 'if-match': ifMatch } } : {}) });
    // A hard delete without If-Match also purges a soft-deleted row; with If-Match it needs a current object.
    if (o.state === 'gone' || (o.state === 'soft' && (!hard || ifMatch !== undefined))) return expectStatus(res, 404, 'delete of nothing');
    if (o.state === 'soft') {
      expectStatus(res, 204, 'hard delete of a soft-deleted object');
      o.state = 'gone';
      return;
    }
    if (!passes(o, ifMatch)) return expectStatus(res, 412, `delete with If-Match ${ifMatch}`);
    expectStatus(res, 204, 'delete');
    o.state = hard ? 'gone' : 'soft';
  }

  async function mapPut() {
    const m = pick(MAPPINGS);
    const froms = ofType(m.from);
    const tos = ofType(m.to);
    if (froms.length === 0 || tos.length === 0) return;
    const from = pick(froms.slice(0, 3));
    const to = pick(tos);
    const sequence = int(6) * 1000 + int(3); // few values: ties are ordered by the to ID
    const res = await call('map put', { method: 'PUT', url: `/v1/mappings/${m.name}/${from.id}/${to.id}`, payload: { sequence } });
    expectStatus(res, 204, 'mapping put');
    const key = `${m.name} ${from.id}`;
    if (!mappings.has(key)) mappings.set(key, new Map());
    mappings.get(key)!.set(to.id, sequence);
  }

  async function mapDelete() {
    const m = pick(MAPPINGS);
    const froms = ofType(m.from);
    const tos = ofType(m.to);
    if (froms.length === 0 || tos.length === 0) return;
    const from = pick(froms.slice(0, 3));
    const list = mappings.get(`${m.name} ${from.id}`);
    const to = list !== undefined && list.size > 0 && chance(0.7) ? pick([...list.keys()]) : pick(tos).id;
    const res = await call('map delete', { method: 'DELETE', url: `/v1/mappings/${m.name}/${from.id}/${to}` });
    if (list?.has(to) === true) {
      expectStatus(res, 204, 'mapping delete');
      list.delete(to);
    } else {
      expectStatus(res, 404, 'mapping delete of an absent pair');
    }
  }

  async function mapList() {
    const m = pick(MAPPINGS);
    const froms = ofType(m.from);
    if (froms.length === 0) return;
    const from = pick(froms.slice(0, 3));
    const order = pick(['asc', 'desc'] as const);
    const limit = 1 + int(4);
    const join = chance(0.3);
    const entries = [...(mappings.get(`${m.name} ${from.id}`) ?? new Map<string, number>()).entries()];
    entries.sort(([a, sa], [b, sb]) => (sa !== sb ? sa - sb : BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0));
    if (order === 'desc') entries.reverse();
    const got: Array<[string, number | undefined]> = [];
    let cursor: string | null = null;
    for (let page = 0; page < 1000; page++) {
      const url = `/v1/mappings/${m.name}/${from.id}${join ? '/objects' : ''}?order=${order}&limit=${limit}${cursor ? `&cursor=${cursor}` : ''}`;
      const res = await call('map list', { method: 'GET', url });
      expectStatus(res, 200, 'mapping list');
      if (join) {
        const body = res.json() as { objects: Array<{ id: string; type: string; data: unknown }>; next: string | null };
        for (const o of body.objects) got.push([o.id, undefined]);
        for (const o of body.objects) checkObjectBody(o, objects.find((x) => x.id === o.id)!, 'join');
        cursor = body.next;
      } else {
        const body = res.json() as { items: Array<{ id: string; sequence: number }>; next: string | null };
        if (body.items.length > limit) fail('mapping page longer than limit');
        for (const i of body.items) got.push([i.id, i.sequence]);
        cursor = body.next;
      }
      if (cursor === null) break;
    }
    const want: Array<[string, number | undefined]> = join
      ? entries.filter(([id]) => objects.find((o) => o.id === id)?.state === 'live').map(([id]) => [id, undefined])
      : entries;
    try {
      assert.deepEqual(got, want);
    } catch {
      fail(`${join ? 'join' : 'list'} ${m.name} ${order} limit ${limit}: ${JSON.stringify(got)} != model ${JSON.stringify(want)}`);
    }
    const count = await call('count', { method: 'GET', url: `/v1/mappings/${m.name}/${from.id}/count` });
    expectStatus(count, 200, 'count');
    if ((count.json() as { count: number }).count !== entries.length) fail(`count ${count.body} != model ${entries.length}`);
  }

  /** The key in the path (not for . and .., which URLs cannot carry there) or in ?key=. */
  function lookupUrl(key: string): string {
    return key !== '.' && key !== '..' && chance(0.5) ? `/v1/lookups/email/${encodeURIComponent(key)}` : `/v1/lookups/email?key=${encodeURIComponent(key)}`;
  }

  async function lookupOp() {
    const key = pick(KEYS);
    const stored = lookups.get(key);
    switch (int(3)) {
      case 0: {
        const target = pick(objects);
        const res = await call('lookup put', { method: 'PUT', url: lookupUrl(key), payload: { id: target.id } });
        expectStatus(res, 204, 'lookup put');
        lookups.set(key, target.id);
        return;
      }
      case 1: {
        const res = await call('lookup get', { method: 'GET', url: lookupUrl(key) });
        if (stored === undefined) return expectStatus(res, 404, 'lookup get of an unset key');
        expectStatus(res, 200, 'lookup get');
        try {
          assert.deepEqual(res.json(), { key, id: stored });
        } catch {
          fail(`lookup get ${JSON.stringify(key)}: ${res.body} != model ${stored}`);
        }
        return;
      }
      default: {
        const res = await call('lookup delete', { method: 'DELETE', url: lookupUrl(key) });
        expectStatus(res, stored === undefined ? 404 : 204, 'lookup delete');
        lookups.delete(key);
      }
    }
  }

  for (let i = 0; i < 6; i++) await create();
  const weights: Array<[number, () => Promise<void>]> = [[12, create], [15, get], [6, multiGet], [15, patch], [7, remove], [15, mapPut], [6, mapDelete], [8, mapList], [16, lookupOp]];
  const total = weights.reduce((s, [w]) => s + w, 0);
  for (let i = 0; i < ops; i++) {
    let r = random() * total;
    for (const [w, op] of weights) {
      r -= w;
      if (r < 0) {
        await op();
        break;
      }
    }
  }
  // A last full pass: every object and every list as the model has them.
  for (const o of objects) {
    const res = await call('final get', { method: 'GET', url: `/v1/objects/${o.id}` });
    if (o.state === 'live') {
      expectStatus(res, 200, 'final get');
      checkObjectBody(res.json(), o, 'final get');
    } else {
      expectStatus(res, 404, 'final get of a deleted object');
    }
  }
  for (let i = 0; i < 6; i++) await mapList();
});
