/**
 * HTTP: GET /v1/objects/{id} of the real service (ShardKit on SQLite, metrics and ETag on)
 * against a bare fastify route returning a constant body of the same size, with the same
 * headers, connections and paths. Each server runs in its own process so that autocannon,
 * in this process, does not share a core with it. Targets (issue 26): >= 0.6x the bare route and
 * >= 0.9x the raw better-sqlite3 route below. Two more servers on the
 * same files: the service with the in-process object cache (config `cache: {kind: "memory"}`,
 * docs/caching.md; every object hot after the warm-up), and a bare fastify route reading with
 * raw better-sqlite3, which shows what a database read itself costs in a server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const CONNECTIONS = 10;
const ROUNDS = 5;
const ROUND_S = 2;
const OBJECTS = 2000;

interface Ready {
  port: number;
  ids: string[];
  body: string;
  etag: string;
}

async function serverMain(kind: string, arg: string): Promise<void> {
  const Fastify = (await import('fastify')).default;
  if (kind === 'bare') {
    const ready = JSON.parse(arg) as { body: string; etag: string };
    const app = Fastify({ logger: false });
    app.get('/v1/objects/:id', async (_req, reply) => reply.header('etag', ready.etag).type('application/json; charset=utf-8').send(ready.body));
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    process.stdout.write(`${JSON.stringify({ port, ids: [], body: ready.body, etag: ready.etag })}\n`);
    return;
  }
  if (kind === 'raw') {
    // The floor of a DB-backed route: one prepared better-sqlite3 statement per shard file, the
    // ID split by hand, the row's JSON spliced into the same response shape. No validation.
    const Database = (await import('better-sqlite3')).default;
    const { pinterestId } = await import('../src/ids/pinterest-id.js');
    const { ShardMap, defaultShardMapJson } = await import('../src/topology/shard-map.js');
    const { shardDatabaseName } = await import('../src/storage/shard-names.js');
    const map = ShardMap.fromJSON(defaultShardMapJson({ shards: 64, pairs: 8 }));
    const stmts = Array.from({ length: 64 }, (_, s) =>
      new Database(join(arg, 'hosts', map.locate(s).master, `${shardDatabaseName(s)}.sqlite`)).prepare('SELECT data, ts FROM pins WHERE local_id = ?'));
    const app = Fastify({ logger: false });
    app.get<{ Params: { id: string } }>('/v1/objects/:id', async (req, reply) => {
      const { shard, localId } = pinterestId.decode(req.params.id);
      const row = stmts[shard]!.get(localId) as { data: string; ts: number };
      return reply.header('etag', '"0000000000000x"').type('application/json; charset=utf-8')
        .send(`{"id":"${req.params.id}","type":"pin","shard":${shard},"data":${row.data},"createdAt":"${new Date(row.ts).toISOString()}"}`);
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    process.stdout.write(`${JSON.stringify({ port, ids: [], body: '', etag: '' })}\n`);
    return;
  }
  const { ShardKit } = await import('../src/kit/shard-kit.js');
  const { buildApp } = await import('../src/http/app.js');
  const { defaultConfig } = await import('../src/config/config.js');
  if (kind === 'cached') {
    // The same files, written by the 'kit' server; this process only reads them.
    const kit = await ShardKit.open({ config: { ...defaultConfig({ shards: 64, pairs: 8 }), cache: { kind: 'memory', maxEntries: 100_000 } }, dataDir: arg });
    const app = await buildApp({ kit });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const port = (app.server.address() as { port: number }).port;
    process.stdout.write(`${JSON.stringify({ port, ids: [], body: '', etag: '' })}\n`);
    return;
  }
  const kit = await ShardKit.open({ config: defaultConfig({ shards: 64, pairs: 8 }), dataDir: arg });
  const ids: string[] = [];
  for (let i = 0; i < OBJECTS; i++) {
    const o = await kit.objects.create('pin', { details: `pin number ${i}`, link: `https://example.com/p/${i}`, board_id: '241294561224164665' }, { shard: i % 64 });
    ids.push(o.id.toString());
  }
  const app = await buildApp({ kit });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const port = (app.server.address() as { port: number }).port;
  const sample = await app.inject({ method: 'GET', url: `/v1/objects/${ids[0]}` });
  process.stdout.write(`${JSON.stringify({ port, ids, body: sample.body, etag: sample.headers.etag })}\n`);
}

function startServer(kind: string, arg: string): Promise<{ proc: ChildProcess; ready: Ready }> {
  const proc = spawn(process.execPath, ['--import', 'tsx', 'bench/http.bench.ts', '--server', kind, arg], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: proc.stdout! });
    lines.once('line', (line) => resolve({ proc, ready: JSON.parse(line) as Ready }));
    proc.once('exit', (code) => reject(new Error(`${kind} server exited with ${code}`)));
  });
}

/** utime + stime of a process in clock ticks (Linux /proc), to report server CPU per request. */
function cpuTicks(pid: number): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return Number.NaN;
  }
}

async function load(port: number, paths: string[], seconds: number, pid?: number): Promise<{ rps: number; p99: number; non2xx: number; cpuUsPerReq: number }> {
  const before = pid === undefined ? Number.NaN : cpuTicks(pid);
  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: paths.map((path) => ({ method: 'GET', path })),
  });
  // Clock ticks are 10 ms on Linux: per-request CPU in microseconds of the server process.
  const cpuUsPerReq = ((cpuTicks(pid ?? -1) - before) * 10_000) / result.requests.total;
  return { rps: result.requests.average, p99: result.latency.p99, non2xx: result.non2xx + result.errors, cpuUsPerReq };
}

type Run = Awaited<ReturnType<typeof load>>;

/** Best throughput round of a server, with its lowest CPU per request over all rounds. */
function best(runs: Run[]): Run {
  const top = runs.reduce((a, b) => (b.rps > a.rps ? b : a));
  return { ...top, cpuUsPerReq: Math.min(...runs.map((r) => r.cpuUsPerReq)) };
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 === 1 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-http-'));
  const kit = await startServer('kit', dir);
  const servers = {
    kit,
    cached: await startServer('cached', dir),
    bare: await startServer('bare', JSON.stringify({ body: kit.ready.body, etag: kit.ready.etag })),
    raw: await startServer('raw', dir),
  };
  const names = Object.keys(servers) as Array<keyof typeof servers>;
  try {
    // Shuffled IDs spread over all 64 shard files; every server gets the same paths.
    const paths = kit.ready.ids.map((id) => `/v1/objects/${id}`).sort(() => Math.random() - 0.5);
    for (const n of names) await load(servers[n].ready.port, paths, 2);
    // Rounds alternate the servers, so load from other tenants of the machine hits all alike;
    // the ratios are medians of the per-round ratios (each pair measured back to back).
    const runs = Object.fromEntries(names.map((n) => [n, [] as Run[]])) as Record<keyof typeof servers, Run[]>;
    for (let round = 0; round < ROUNDS; round++) {
      for (const n of names) {
        const r = await load(servers[n].ready.port, paths, ROUND_S, servers[n].proc.pid);
        if (r.non2xx > 0) throw new Error(`${r.non2xx} errors from the ${n} server`);
        runs[n].push(r);
      }
    }
    const ratio = (a: keyof typeof servers, b: keyof typeof servers) => median(runs[a].map((r, i) => r.rps / runs[b][i]!.rps));
    const line = (label: string, r: Run, note = '') =>
      console.log(`  ${label.padEnd(30)} ${Math.round(r.rps).toLocaleString('en-US').padStart(7)} req/s  p99 ${r.p99} ms  server CPU ${r.cpuUsPerReq.toFixed(0)} us/req${note}`);
    const b = { kit: best(runs.kit), cached: best(runs.cached), bare: best(runs.bare), raw: best(runs.raw) };
    console.log(`GET /v1/objects/{id}: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${ROUND_S} s per server (rates: best round), ${kit.ready.body.length}-byte bodies, ${OBJECTS} objects on 64 shard files`);
    line('shardkit service', b.kit);
    line('shardkit service, memory cache', b.cached, '  (every object hot)');
    line('bare fastify constant', b.bare);
    line('raw better-sqlite3 route', b.raw, '  (no validation, for reference)');
    const rounds = (a: keyof typeof servers) => runs[a].map((r, i) => (r.rps / runs.bare[i]!.rps).toFixed(2)).join(' ');
    console.log(`  ratio shardkit/bare             ${ratio('kit', 'bare').toFixed(2)}x throughput (median of ${ROUNDS} round pairs: ${rounds('kit')}; target >= 0.6x); CPU per request bare/shardkit ${(b.bare.cpuUsPerReq / b.kit.cpuUsPerReq).toFixed(2)}`);
    console.log(`  ratio cached/bare               ${ratio('cached', 'bare').toFixed(2)}x throughput (rounds: ${rounds('cached')}); CPU per request bare/cached ${(b.bare.cpuUsPerReq / b.cached.cpuUsPerReq).toFixed(2)}`);
    console.log(`  ratio shardkit/raw route        ${ratio('kit', 'raw').toFixed(2)}x throughput (target >= 0.9x); CPU per request raw/shardkit ${(b.raw.cpuUsPerReq / b.kit.cpuUsPerReq).toFixed(2)}`);
  } finally {
    for (const n of names) servers[n].proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const serverIndex = process.argv.indexOf('--server');
if (serverIndex >= 0) await serverMain(process.argv[serverIndex + 1]!, process.argv[serverIndex + 2]!);
else await main();
