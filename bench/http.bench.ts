/**
 * HTTP: GET /v1/objects/{id} of the real service (ShardKit on SQLite, metrics and ETag on)
 * against a bare fastify route returning a constant body of the same size, with the same
 * headers, connections and paths. Each server runs in its own process so that autocannon,
 * in this process, does not share a core with it. Target: >= 0.5x. A third server, a bare
 * fastify route reading the same files with raw better-sqlite3, shows what a database read
 * itself costs in a server.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const CONNECTIONS = 10;
const DURATION_S = 6;
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
    const { ShardMap, defaultShardMapJson, shardDatabaseName } = await import('../src/topology/shard-map.js');
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
  const { ShardKit } = await import('../src/store/shard-kit.js');
  const { buildApp } = await import('../src/http/app.js');
  const { defaultConfig } = await import('../src/config/config.js');
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

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bench-http-'));
  const kit = await startServer('kit', dir);
  const bare = await startServer('bare', JSON.stringify({ body: kit.ready.body, etag: kit.ready.etag }));
  const raw = await startServer('raw', dir);
  try {
    // Shuffled IDs spread over all 64 shard files; the bare server gets the same paths.
    const paths = kit.ready.ids.map((id) => `/v1/objects/${id}`).sort(() => Math.random() - 0.5);
    await load(kit.ready.port, paths, 2);
    await load(bare.ready.port, paths, 2);
    await load(raw.ready.port, paths, 2);
    // Alternate the two servers and keep the best of each: load on the machine hits both alike.
    let k = { rps: 0, p99: 0, non2xx: 0, cpuUsPerReq: Infinity };
    let b = { rps: 0, p99: 0, non2xx: 0, cpuUsPerReq: Infinity };
    let r = { rps: 0, p99: 0, non2xx: 0, cpuUsPerReq: Infinity };
    const ratios: number[] = [];
    for (let round = 0; round < 3; round++) {
      const kr = await load(kit.ready.port, paths, DURATION_S / 2, kit.proc.pid);
      const br = await load(bare.ready.port, paths, DURATION_S / 2, bare.proc.pid);
      const rr = await load(raw.ready.port, paths, DURATION_S / 2, raw.proc.pid);
      if (rr.non2xx > 0) throw new Error(`errors on the raw server: ${rr.non2xx}`);
      if (rr.rps > r.rps) r = { ...rr, cpuUsPerReq: Math.min(r.cpuUsPerReq, rr.cpuUsPerReq) };
      else r.cpuUsPerReq = Math.min(r.cpuUsPerReq, rr.cpuUsPerReq);
      if (kr.non2xx > 0 || br.non2xx > 0) throw new Error(`errors during the run: ${kr.non2xx} / ${br.non2xx}`);
      ratios.push(kr.rps / br.rps);
      if (kr.rps > k.rps) k = { ...kr, cpuUsPerReq: Math.min(k.cpuUsPerReq, kr.cpuUsPerReq) };
      else k.cpuUsPerReq = Math.min(k.cpuUsPerReq, kr.cpuUsPerReq);
      if (br.rps > b.rps) b = { ...br, cpuUsPerReq: Math.min(b.cpuUsPerReq, br.cpuUsPerReq) };
      else b.cpuUsPerReq = Math.min(b.cpuUsPerReq, br.cpuUsPerReq);
    }
    console.log(`GET /v1/objects/{id}: ${CONNECTIONS} connections, ${DURATION_S / 2} s rounds (3 alternating rounds; rates: best round), ${kit.ready.body.length}-byte bodies, ${OBJECTS} objects on 64 shard files`);
    console.log(`  shardkit service          ${Math.round(k.rps).toLocaleString('en-US')} req/s  p99 ${k.p99} ms  server CPU ${k.cpuUsPerReq.toFixed(0)} us/req`);
    console.log(`  bare fastify constant     ${Math.round(b.rps).toLocaleString('en-US')} req/s  p99 ${b.p99} ms  server CPU ${b.cpuUsPerReq.toFixed(0)} us/req`);
    console.log(`  raw better-sqlite3 route  ${Math.round(r.rps).toLocaleString('en-US')} req/s  p99 ${r.p99} ms  server CPU ${r.cpuUsPerReq.toFixed(0)} us/req  (no validation, for reference)`);
    const median = [...ratios].sort((x, y) => x - y)[1]!;
    console.log(`  ratio shardkit/bare       ${median.toFixed(2)}x throughput (median of 3 round pairs; target >= 0.5x); CPU per request ratio bare/shardkit ${(b.cpuUsPerReq / k.cpuUsPerReq).toFixed(2)}`);
    console.log(`  ratio shardkit/raw route  ${(k.rps / r.rps).toFixed(2)}x throughput; CPU per request ratio raw/shardkit ${(r.cpuUsPerReq / k.cpuUsPerReq).toFixed(2)}`);
  } finally {
    kit.proc.kill('SIGTERM');
    bare.proc.kill('SIGTERM');
    raw.proc.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

const serverIndex = process.argv.indexOf('--server');
if (serverIndex >= 0) await serverMain(process.argv[serverIndex + 1]!, process.argv[serverIndex + 2]!);
else await main();
