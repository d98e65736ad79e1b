/**
 * The wide-column routes over HTTP, embedded RocksDB against MyRocks, for a user choosing between
 * the engines (issue 19): Put Row of 10 columns and Get Row latest of 10 columns, p50 and p99.
 * Each service runs in its own process (the routes and parser settings of buildApp), listening
 * on loopback; autocannon in this process sends a fixed number of concurrent requests. MyRocks
 * runs on two local MariaDB servers (64 wide-column shards, 32 per server) reached over their
 * unix sockets: its extra cost is that hop to the server. Rounds alternate between the two.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import autocannon from 'autocannon';

const CONNECTIONS = 10;
const ROUNDS = 4;
const ROUND_S = 3;
const ROWS = 500;
const COLS = Array.from({ length: 10 }, (_, i) => `col${i}`);
const VALUE = 'x'.repeat(100);
const SHARDS = 64;

interface ServeArgs {
  kind: 'embedded' | 'myrocks';
  dir?: string;
  hosts?: Record<string, { socket: string }>;
}

function shardMapJson(): unknown {
  const ranges = [{ range: [0, SHARDS / 2 - 1], master: 'A' }, { range: [SHARDS / 2, SHARDS - 1], master: 'B' }];
  return { version: 1, ranges, modShards: { count: SHARDS, ranges } };
}

/** Child process: one engine behind the wide-column routes, seeded with ROWS rows; prints its port. */
async function serve(args: ServeArgs): Promise<void> {
  const Fastify = (await import('fastify')).default;
  const { bodyStrictValidator } = await import('../src/http/app.js');
  const { installErrorHandler } = await import('../src/http/error-handler.js');
  const { widecolumnRoutes } = await import('../src/http/routes/widecolumn-routes.js');
  let engine;
  if (args.kind === 'embedded') {
    const { rocksDbDriver } = await import('../src/widecolumn/service.js');
    engine = await rocksDbDriver(join(args.dir!, 'widecolumn'), { shards: SHARDS }).open();
  } else {
    const { MyrocksEngine } = await import('../src/widecolumn/myrocks/index.js');
    const { ShardMap } = await import('../src/topology/shard-map.js');
    const map = ShardMap.fromJSON(shardMapJson() as never);
    engine = new MyrocksEngine({ hosts: args.hosts!, shardMap: () => map, storage: { user: userInfo().username, poolSize: 10 } });
    await engine.createShards();
  }
  await engine.putDataset('bench', { maxVersions: 1000 });
  for (let i = 0; i < ROWS; i++) await engine.putRow('bench', `user:${i}`, COLS.map((column) => ({ column, value: VALUE })));
  // The parser settings of buildApp (src/http/app.ts), as test/widecolumn/http-engine.ts does.
  const app = Fastify({ logger: false, onProtoPoisoning: 'error', ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
  installErrorHandler(app);
  await app.register(widecolumnRoutes(engine, { exportDir: join(tmpdir(), 'nonexistent-export') }));
  await app.listen({ port: 0, host: '127.0.0.1' });
  process.stdout.write(`${JSON.stringify({ port: (app.server.address() as { port: number }).port })}\n`);
}

async function start(args: ServeArgs): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'serve', JSON.stringify(args)], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (code) => reject(new Error(`${args.kind} server exited with ${code}`)));
  });
  return { child, port: (JSON.parse(line) as { port: number }).port };
}

interface Round {
  rps: number;
  p50: number;
  p99: number;
}

async function round(port: number, op: 'put' | 'get'): Promise<Round> {
  let n = 0;
  const body = JSON.stringify({ items: COLS.map((column) => ({ column, value: VALUE })) });
  const r = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections: CONNECTIONS,
    duration: ROUND_S,
    requests: [{
      setupRequest: (req) => {
        const path = `/v1/datasets/bench/rows/${encodeURIComponent(`user:${n++ % ROWS}`)}`;
        return op === 'get' ? { ...req, method: 'GET', path } : { ...req, method: 'PUT', path, body, headers: { 'content-type': 'application/json' } };
      },
    }],
  });
  const bad = r.non2xx + r.errors + r.timeouts;
  if (bad > 0) throw new Error(`${op} on port ${port}: ${bad} failed requests`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

async function main(): Promise<void> {
  if (!existsSync('/usr/lib/mysql/plugin/ha_rocksdb.so')) {
    console.log('skipped: mariadb-plugin-rocksdb is not installed (scripts/install-test-deps.sh)');
    return;
  }
  const { startMyrocksServers } = await import('../test/widecolumn/myrocks-servers.js');
  const fx = await startMyrocksServers();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-wchttp-'));
  const children: ChildProcess[] = [];
  try {
    const embedded = await start({ kind: 'embedded', dir });
    children.push(embedded.child);
    const myrocks = await start({ kind: 'myrocks', hosts: { A: { socket: fx.servers.A.socket }, B: { socket: fx.servers.B.socket } } });
    children.push(myrocks.child);
    console.log(`wide-column over HTTP: ${CONNECTIONS} connections, ${ROUNDS} alternating rounds of ${ROUND_S} s per engine and operation, ${ROWS} rows of 10 columns x 100 bytes; MyRocks on 2 local MariaDB servers (unix sockets), ${SHARDS} shards`);
    for (const op of ['put', 'get'] as const) {
      await round(embedded.port, op);
      await round(myrocks.port, op);
      const res: Record<string, Round[]> = { embedded: [], myrocks: [] };
      for (let i = 0; i < ROUNDS; i++) {
        const order = i % 2 === 0 ? (['embedded', 'myrocks'] as const) : (['myrocks', 'embedded'] as const);
        for (const k of order) res[k]!.push(await round(k === 'embedded' ? embedded.port : myrocks.port, op));
      }
      const label = op === 'put' ? 'Put Row, 10 columns' : 'Get Row latest, 10 columns';
      for (const k of ['embedded', 'myrocks'] as const) {
        const rs = res[k]!;
        console.log(`${label.padEnd(28)} ${k.padEnd(9)} ${median(rs.map((r) => r.rps)).toFixed(0).padStart(6)} req/s   p50 ${median(rs.map((r) => r.p50)).toFixed(1).padStart(5)} ms   p99 ${median(rs.map((r) => r.p99)).toFixed(1).padStart(5)} ms   (median of ${ROUNDS} rounds; p99 per round: ${rs.map((r) => r.p99).join(', ')})`);
      }
    }
  } finally {
    for (const c of children) c.kill();
    await Promise.all(children.map((c) => (c.exitCode === null ? new Promise((resolve) => c.once('exit', resolve)) : undefined)));
    await fx.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[2] === 'serve') await serve(JSON.parse(process.argv[3]!) as ServeArgs);
else await main();
