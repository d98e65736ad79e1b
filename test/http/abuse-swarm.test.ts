/**
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`; ~10 s of sockets).
 * Issue #34, the abuse test: a bounded swarm of hostile clients (aborted uploads, slow bodies,
 * slow headers, duplicate-heavy batch reads, huge multi-gets, rebinding Host headers, cross-site
 * simple POSTs) runs on loopback beside honest clients that keep a ledger of their acknowledged
 * writes. Afterwards: every honest request succeeded or got a retryable answer (503 OVERLOADED),
 * every acknowledged write reads back as written, each attack got its expected refusal, no
 * socket is left open (CLOSE-WAIT), memory stayed under the bound, and /v1/ answers normally.
 * The attack mix comes from a printed seed (SWARM_SEED=n reruns one).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import { mulberry32 } from '../../src/util/prng.js';
import { openStore, tempDir } from '../widecolumn/helpers.js';
import { listeningApp } from './http-fixture.js';
import { heldCount, heldSockets } from './os-sockets.js';

const HOSTILE_WORKERS = 6;
const ATTACKS_PER_WORKER = 12;
const HONEST_WORKERS = 3;
const HONEST_OPS = 40;
const BODY_TIMEOUT_MS = 400;
/** Heap growth the whole run may cause: one 1 MiB object answered 1000 times was 1.2 GB before #34. */
const HEAP_BOUND_BYTES = 384 * 1024 * 1024;

interface Answer {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

/** One request on its own connection (closed after): no pooled socket outlives the run. */
function call(port: number, method: string, path: string, options: { headers?: Record<string, string>; body?: string } = {}): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, agent: false, headers: { ...(options.body !== undefined ? { 'content-length': String(Buffer.byteLength(options.body)) } : {}), ...options.headers } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString(), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** A raw connection: writes `first`, then `each` every 25 ms (slow), until the server closes or `giveUpAfter` writes. */
function raw(port: number, first: string, each: string | undefined, giveUpAfter: number, how: 'end' | 'destroy'): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let writes = 0;
    let timer: NodeJS.Timeout | undefined;
    socket.on('error', () => {});
    socket.on('data', (c: Buffer) => (text += c.toString('latin1')));
    socket.once('close', () => {
      clearInterval(timer);
      resolve(text);
    });
    socket.once('connect', () => {
      socket.write(first);
      timer = setInterval(() => {
        if (each !== undefined && writes < giveUpAfter && socket.writable) {
          socket.write(each);
          writes++;
          return;
        }
        clearInterval(timer);
        if (how === 'end') socket.end();
        else socket.destroy();
      }, 25);
    });
  });
}

test('a swarm of hostile clients cannot take the service from honest ones: ledger intact, no socket left, memory bounded', { timeout: 180_000 }, async () => {
  const seed = Number(process.env.SWARM_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`abuse swarm seed ${seed} (SWARM_SEED=${seed} reruns it)`);
  const random = mulberry32(seed);
  const tmp = tempDir();
  const store = await openStore(tmp.dir);
  const f = await listeningApp({ plugins: [widecolumnRoutes(store)], limits: { maxConcurrent: 4 }, app: { bodyTimeoutMs: BODY_TIMEOUT_MS, hosts: ['127.0.0.1'] } });
  const port = f.port;
  const baseline = process.memoryUsage().heapUsed;
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage().heapUsed);
  }, 20);
  try {
    // Targets of the batch-read attacks: a 1 MiB object and a 4 MB wide-column row.
    const big = await f.kit.objects.create('pin', { big: 'x'.repeat(1024 * 1024) }, { shard: 3 });
    await store.putDataset('d', { maxVersions: 1 });
    const value = Buffer.alloc(1_000_000, 'a');
    await store.putRow('d', 'fat', [0, 1, 2, 3].map((c) => ({ column: `c${c}`, value })));

    const json = { 'content-type': 'application/json' };
    /** Each attack and the answers it may get (undefined: the server closes without one, or the client left). */
    const attacks: Record<string, () => Promise<string>> = {
      abortedUpload: async () => {
        await raw(port, `POST /v1/objects/board HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n{"data":{"n":"`, 'xxxxxxxx', 3, random() < 0.5 ? 'end' : 'destroy');
        return 'left';
      },
      slowBody: async () => {
        const text = await raw(port, `POST /v1/objects/board HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n{"data":{"n":"`, 'x', 1_000_000, 'end');
        return /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? 'closed';
      },
      slowHeaders: async () => {
        await raw(port, 'GET /v1/topology HTTP/1.1\r\nHost: 127.0.0.1\r\n', 'X-a: b\r\n', 8, 'end');
        return 'left';
      },
      duplicateBatchGet: async () => (await call(port, 'POST', '/v1/datasets/d/rows:batchGet', { headers: json, body: JSON.stringify({ requests: Array(300).fill({ row: 'fat' }) }) })).status.toString(),
      hugeMultiGet: async () => (await call(port, 'GET', `/v1/objects?ids=${Array(1000).fill(big.id.toString()).join(',')}`)).status.toString(),
      rebindingHost: async () => (await call(port, 'POST', '/v1/objects/board', { headers: { ...json, host: 'rebind.attacker.example:7070' }, body: '{"data":{"n":"rebound"}}' })).status.toString(),
      crossSitePost: async () => (await call(port, 'POST', '/v1/objects/board', { headers: { origin: 'http://attacker.example' } })).status.toString(),
      crossSiteTextPost: async () => (await call(port, 'POST', '/v1/objects/board', { headers: { origin: 'http://attacker.example', 'content-type': 'text/plain' }, body: '{"data":{"n":"csrf"}}' })).status.toString(),
    };
    // What each attack may end with; 503 is the cap doing its job.
    const expected: Record<string, string[]> = {
      abortedUpload: ['left'],
      slowBody: ['408', '503'],
      slowHeaders: ['left'],
      duplicateBatchGet: ['400', '503'],
      hugeMultiGet: ['400', '503'],
      rebindingHost: ['421', '503'],
      crossSitePost: ['415', '503'],
      crossSiteTextPost: ['415', '503'],
    };
    const names = Object.keys(attacks);
    const plans = Array.from({ length: HOSTILE_WORKERS }, () => Array.from({ length: ATTACKS_PER_WORKER }, () => names[Math.floor(random() * names.length)]!));
    const seen: Array<[string, string]> = [];
    const hostile = plans.map(async (plan) => {
      for (const name of plan) seen.push([name, await attacks[name]!()]);
    });

    // Honest clients: creates (ledger of acknowledged ones), reads of their own, lookups.
    const ledger = new Map<string, { worker: number; n: number }>();
    const honestAnswers: number[] = [];
    const honest = Array.from({ length: HONEST_WORKERS }, async (_, worker) => {
      for (let n = 0; n < HONEST_OPS; n++) {
        for (;;) {
          const res = await call(port, 'POST', '/v1/objects/board', { headers: json, body: JSON.stringify({ data: { worker, n } }) });
          honestAnswers.push(res.status);
          if (res.status === 201) {
            ledger.set((JSON.parse(res.text) as { id: string }).id, { worker, n });
            break;
          }
          assert.equal(res.status, 503, `honest create: ${res.status} ${res.text}`);
          assert.equal(JSON.parse(res.text).error.code, 'OVERLOADED');
          assert.ok(res.headers['retry-after'] !== undefined);
          await sleep(10);
        }
        const mine = [...ledger].filter(([, v]) => v.worker === worker);
        const [id, data] = mine[Math.floor(random() * mine.length)]!;
        const read = await call(port, 'GET', `/v1/objects/${id}`);
        honestAnswers.push(read.status);
        if (read.status === 200) assert.deepEqual((JSON.parse(read.text) as { data: unknown }).data, data);
        else assert.equal(read.status, 503, `honest read: ${read.status} ${read.text}`);
      }
    });
    await Promise.all([...honest, ...hostile]);

    for (const [name, outcome] of seen) assert.ok(expected[name]!.includes(outcome), `${name} ended with ${outcome}; expected one of ${expected[name]!.join(', ')}`);
    assert.equal(ledger.size, HONEST_WORKERS * HONEST_OPS);
    // 0 acknowledged writes lost: each reads back as written, and nothing hostile was stored.
    const ids = [...ledger.keys()];
    for (let i = 0; i < ids.length; i += 50) {
      const res = await call(port, 'GET', `/v1/objects?ids=${ids.slice(i, i + 50).join(',')}`);
      assert.equal(res.status, 200, res.text);
      for (const o of (JSON.parse(res.text) as { objects: Array<{ id: string; data: unknown }> }).objects) assert.deepEqual(o.data, ledger.get(o.id), o.id);
    }
    // No connection of the swarm is left as the kernel sees them (CLOSE-WAIT included), and none
    // the server still counts: a bounded wait for the outcome.
    for (let i = 0; i < 500 && heldCount(port) > 0; i++) await sleep(10);
    assert.deepEqual(heldSockets(port), {}, 'server-side sockets the kernel still lists for the service port');
    assert.equal(await new Promise<number>((resolve, reject) => f.app.server.getConnections((err, n) => (err ? reject(err) : resolve(n)))), 0, 'connections the server still counts');
    const after = await call(port, 'GET', '/v1/topology');
    assert.equal(after.status, 200, after.text);
    clearInterval(sampler);
    assert.ok(peak - baseline < HEAP_BOUND_BYTES, `heap grew by ${Math.round((peak - baseline) / 2 ** 20)} MiB (bound ${HEAP_BOUND_BYTES / 2 ** 20} MiB)`);
    console.log(`attacks ${seen.length}, honest requests ${honestAnswers.length} (${honestAnswers.filter((s) => s === 503).length} shed), heap growth ${Math.round((peak - baseline) / 2 ** 20)} MiB`);
  } finally {
    clearInterval(sampler);
    f.app.server.closeAllConnections();
    await f.cleanup();
    await store.close();
    tmp.cleanup();
  }
});
