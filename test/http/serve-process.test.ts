/**
 * The real `shardkit serve` process: first start, kill -9 during a stream of acknowledged
 * writes, restart, graceful SIGTERM, and `shardkit demo seed` against it.
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): three `serve`
 * processes, one killed with -9, and five more CLI processes (~18 s of CPU).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { CLI as CLI_JS, ensureBuilt } from '../cli/cli-harness.js';

const CLI = [CLI_JS];
ensureBuilt();

interface Server {
  proc: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

/** Starts `shardkit serve` on a free port and waits until it listens. */
async function startServer(dataDir: string): Promise<Server> {
  const proc = spawn(process.execPath, [...CLI, 'serve', '--data', dataDir, '--port', '0', '--no-widecolumn'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    };
    proc.stdout!.on('data', onData);
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    void exited.then((code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
  return { proc, url, output: () => out, exited };
}

async function call(url: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; body: string; etag: string | null }> {
  const res = await fetch(url + path, {
    method,
    headers: { ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: res.status, body: await res.text(), etag: res.headers.get('etag') };
}

test('kill -9 during a stream of acknowledged writes loses none of them', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-serve-'));
  let server: Server | undefined;
  try {
    server = await startServer(dir);
    const s = server;
    // Written on first start: the embedded default config.
    assert.deepEqual(JSON.parse(readFileSync(join(dir, 'shardkit.json'), 'utf8')), JSON.parse(JSON.stringify(defaultConfig({ hostNames: 'local' }))));
    const user = JSON.parse((await call(s.url, 'POST', '/v1/objects/user', { data: { name: 'writer' } })).body) as { id: string };
    const counter = JSON.parse((await call(s.url, 'POST', '/v1/objects/pin', { data: { count: 0 } })).body) as { id: string };
    const acked = { objects: new Map<string, unknown>(), likes: new Set<string>(), lookups: new Map<string, string>(), increments: 0 };
    let stop = false;
    let n = 0;
    const writer = async (w: number) => {
      try {
        while (!stop) {
          const k = n++;
          const data = { w, k, text: `pin ${k} "quoted" 🦄` };
          const created = await call(s.url, 'POST', '/v1/objects/pin', { data });
          if (created.status !== 201) throw new Error(created.body);
          const pin = JSON.parse(created.body) as { id: string };
          acked.objects.set(pin.id, data);
          if ((await call(s.url, 'PUT', `/v1/mappings/user_likes_pins/${user.id}/${pin.id}`, { sequence: k })).status === 204) acked.likes.add(pin.id);
          if ((await call(s.url, 'PUT', `/v1/lookups/username/w${w}-${k}`, { id: pin.id })).status === 204) acked.lookups.set(`w${w}-${k}`, pin.id);
          for (;;) {
            const cur = await call(s.url, 'GET', `/v1/objects/${counter.id}`);
            const count = (JSON.parse(cur.body) as { data: { count: number } }).data.count;
            const patched = await call(s.url, 'PATCH', `/v1/objects/${counter.id}`, { count: count + 1 }, { 'if-match': cur.etag! });
            if (patched.status === 200) {
              acked.increments++;
              break;
            }
            assert.equal(patched.status, 412);
          }
        }
      } catch {
        // The connection died with the server: whatever was in flight is not acknowledged.
      }
    };
    const writers = Array.from({ length: 6 }, (_, w) => writer(w));
    while (acked.objects.size < 100) await new Promise((r) => setTimeout(r, 20));
    s.proc.kill('SIGKILL');
    assert.equal(await s.exited, null);
    stop = true;
    await Promise.all(writers);

    server = await startServer(dir);
    const r = server;
    for (const [id, data] of acked.objects) {
      const got = await call(r.url, 'GET', `/v1/objects/${id}`);
      assert.equal(got.status, 200, `acknowledged object ${id} is missing`);
      assert.deepEqual((JSON.parse(got.body) as { data: unknown }).data, data);
    }
    const listed = new Set<string>();
    let cursor: string | null = null;
    do {
      const page = await call(r.url, 'GET', `/v1/mappings/user_likes_pins/${user.id}?limit=1000${cursor ? `&cursor=${cursor}` : ''}`);
      const body = JSON.parse(page.body) as { items: Array<{ id: string }>; next: string | null };
      for (const it of body.items) listed.add(it.id);
      cursor = body.next;
    } while (cursor !== null);
    for (const id of acked.likes) assert.ok(listed.has(id), `acknowledged mapping to ${id} is missing`);
    for (const [key, id] of acked.lookups) assert.equal((JSON.parse((await call(r.url, 'GET', `/v1/lookups/username/${key}`)).body) as { id: string }).id, id);
    const count = (JSON.parse((await call(r.url, 'GET', `/v1/objects/${counter.id}`)).body) as { data: { count: number } }).data.count;
    // Every acknowledged increment is there; at most one per writer was applied but not acknowledged.
    assert.ok(count >= acked.increments && count <= acked.increments + 6, `count ${count}, acknowledged ${acked.increments}`);

    // SIGTERM: finishes in-flight requests, closes the files, exits 0.
    r.proc.kill('SIGTERM');
    assert.equal(await r.exited, 0);
    assert.match(r.output(), /"msg":"stopped"/);
    server = undefined;
  } finally {
    server?.proc.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
});

test('shardkit demo seed fills a graph through a running service', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-demo-'));
  const server = await startServer(dir);
  try {
    const seeded = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const p = spawn(process.execPath, [...CLI, 'demo', 'seed', '--url', server.url, '--users', '3'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let stdout = '';
      let stderr = '';
      p.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
      p.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
      p.once('exit', (code) => resolve({ code, stdout, stderr }));
    });
    assert.equal(seeded.code, 0, seeded.stderr);
    const summary = JSON.parse(seeded.stdout.split('\n')[0]!) as { users: number; boards: number; pins: number; exampleUser: string; exampleBoard: string };
    assert.deepEqual([summary.users, summary.boards, summary.pins], [3, 9, 72]);
    // Progress is reported as JSON lines when stderr is not a TTY.
    assert.match(seeded.stderr, /"msg":"demo seed finished"/);
    const count = async (path: string) => (JSON.parse((await call(server.url, 'GET', path)).body) as { count: number }).count;
    assert.equal(await count(`/v1/mappings/user_has_boards/${summary.exampleUser}/count`), 3);
    assert.equal(await count(`/v1/mappings/board_has_pins/${summary.exampleBoard}/count`), 8);
    assert.equal(await count(`/v1/mappings/user_likes_pins/${summary.exampleUser}/count`) > 0, true);
    const join = JSON.parse((await call(server.url, 'GET', `/v1/mappings/board_has_pins/${summary.exampleBoard}/objects?limit=3`)).body) as { objects: Array<{ type: string; data: { board_id: string } }> };
    assert.equal(join.objects.length, 3);
    for (const o of join.objects) assert.deepEqual([o.type, o.data.board_id], ['pin', summary.exampleBoard]);
    // The dashboard is on by default: / leads to it.
    const root = await fetch(`${server.url}/`, { redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/dashboard/');
    assert.match(await (await fetch(`${server.url}/dashboard/`)).text(), /<title>shardkit dashboard<\/title>/);
    // serve checks the Host without an auth file (#34 finding 5: DNS rebinding wrote objects).
    const rebound = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const req = httpRequest(`${server.url}/v1/topology`, { headers: { host: 'rebind.attacker.example' } }, (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.once('error', reject).end();
    });
    assert.equal(rebound.status, 421, rebound.body);
    assert.match(rebound.body, /HOST_NOT_ALLOWED/);
  } finally {
    server.proc.kill('SIGTERM');
    await server.exited;
    rmSync(dir, { recursive: true, force: true });
  }
});

test('CLI bad input: one line on stderr and exit 2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-cli-'));
  try {
    for (const args of [
      ['serve', '--data', dir, '--port', 'eighty'],
      ['serve', '--data', dir, '--body-timeout', '0'],
      ['serve', '--data', dir, '--body-timeout', 'slow'],
      ['serve', '--data', dir, '--config', join(dir, 'missing.json')],
      ['demo', 'seed', '--users', '0'],
    ]) {
      const res = spawnSync(process.execPath, [...CLI, ...args], { encoding: 'utf8' });
      assert.equal(res.status, 2, `${args.join(' ')}: ${res.stderr}`);
      assert.equal(res.stderr.trim().split('\n').length, 1, res.stderr);
      assert.match(res.stderr, /^shardkit: (INVALID_ARGUMENT|INVALID_CONFIG)/);
    }
    assert.equal(existsSync(join(dir, 'shardkit.json')), false, 'refused commands write no config');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
