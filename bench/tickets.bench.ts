// Ticket servers: classic (one REPLACE per ID) vs segment mode (blocks in memory), against raw mysql2
// sending the same SQL, on 2 real local MariaDB ticket servers. Prints IDs/s, p99 of next() and ratios.
import { userInfo } from 'node:os';
import mysql from 'mysql2/promise';
import { Snowflake } from '@sapphire/snowflake';
import { initTicketServers, TicketClient } from '../src/index.js';
import { startTicketCluster } from '../test/tickets/ticket-cluster.js';

interface Result {
  name: string;
  ids: number;
  seconds: number;
  p50us?: number;
  p99us?: number;
  samples?: Float64Array;
}

const rate = (r: Result) => r.ids / r.seconds;
const fmt = (n: number) => (n >= 1e6 ? `${(n / 1e6).toFixed(2)}M` : n >= 1e3 ? `${(n / 1e3).toFixed(1)}k` : n.toFixed(0));

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

/** Sequential awaited calls for `ms`; every call timed (the timer itself costs ~0.05 µs). */
async function timedLoop(name: string, ms: number, call: () => Promise<unknown>, maxSamples = 5_000_000): Promise<Result> {
  const lat = new Float64Array(maxSamples);
  let n = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  while (n < maxSamples) {
    const s = performance.now();
    await call();
    const e = performance.now();
    lat[n++] = e - s;
    if (e > end) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  const sorted = lat.subarray(0, n).sort();
  return { name, ids: n, seconds, p50us: percentile(sorted, 0.5) * 1000, p99us: percentile(sorted, 0.99) * 1000, samples: sorted.slice() };
}

/** Throughput only: `concurrency` loops of awaited calls, no per-call timer. */
async function throughput(name: string, ms: number, concurrency: number, call: () => Promise<unknown>, idsPerCall = 1): Promise<Result> {
  let calls = 0;
  const t0 = performance.now();
  const end = t0 + ms;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    for (;;) {
      for (let i = 0; i < 256; i++) {
        await call();
        calls++;
      }
      if (performance.now() > end) return;
    }
  }));
  return { name, ids: calls * idsPerCall, seconds: (performance.now() - t0) / 1000 };
}

function print(r: Result): void {
  const lat = r.p99us !== undefined ? `  p50 ${r.p50us!.toFixed(2)} µs  p99 ${r.p99us.toFixed(2)} µs` : '';
  console.log(`${r.name.padEnd(58)} ${fmt(rate(r)).padStart(8)} IDs/s${lat}`);
}

const cluster = await startTicketCluster(2, { prefix: 'sk-tbench-' });
const results: Result[] = [];
try {
  await initTicketServers(cluster.config);
  const cfg = { ...cluster.config, queryTimeoutMs: 5000, connectTimeoutMs: 5000 };

  // Raw mysql2: one connection to one server, the seed's two statements in one round trip.
  const s0 = cluster.config.servers[0]!;
  const raw = await mysql.createConnection({ socketPath: s0.socket!, user: userInfo().username, database: 'tickets', multipleStatements: true, supportBigNumbers: true, bigNumberStrings: true });
  const rawSql = "REPLACE INTO `photos` (stub) VALUES ('a'); SELECT LAST_INSERT_ID() AS id;";
  // Same server, same SQL: the client's overhead (pool, deadlines, residue check, selector).
  const classicOne = new TicketClient({ ...cfg, servers: [cfg.servers[0]!], increment: 2 }, { mode: 'classic' });
  const classic = new TicketClient(cfg, { mode: 'classic' });
  await timedLoop('warm-up', 500, () => raw.query(rawSql));
  await timedLoop('warm-up', 500, () => classicOne.next('photos'));
  await timedLoop('warm-up', 500, () => classic.next('photos'));
  // Interleaved rounds so that load from other processes hits every side alike.
  const rawRounds: Result[] = [];
  const oneRounds: Result[] = [];
  const classicRounds: Result[] = [];
  for (let round = 0; round < 4; round++) {
    rawRounds.push(await timedLoop('raw', 700, () => raw.query(rawSql)));
    oneRounds.push(await timedLoop('classic, 1 server', 700, () => classicOne.next('photos')));
    classicRounds.push(await timedLoop('classic', 700, () => classic.next('photos')));
  }
  await classicOne.close();
  const merge = (name: string, rs: Result[]): Result => {
    const all = new Float64Array(rs.reduce((a, r) => a + r.samples!.length, 0));
    let at = 0;
    for (const r of rs) {
      all.set(r.samples!, at);
      at += r.samples!.length;
    }
    all.sort();
    return { name, ids: at, seconds: rs.reduce((a, r) => a + r.seconds, 0), p50us: percentile(all, 0.5) * 1000, p99us: percentile(all, 0.99) * 1000 };
  };
  const rawSeq = merge('raw mysql2 REPLACE+SELECT, 1 connection, sequential', rawRounds);
  const oneSeq = merge('classic next(), sequential, same single server', oneRounds);
  const classicSeq = merge('classic next(), sequential (2 servers, round robin)', classicRounds);
  results.push(rawSeq, oneSeq, classicSeq);
  print(rawSeq);
  print(oneSeq);
  print(classicSeq);
  await raw.end();
  const classicConc = await throughput('classic next(), 16 in flight', 4000, 16, () => classic.next('photos'));
  results.push(classicConc);
  print(classicConc);
  const classicBatch = await throughput('classic nextBatch(200): 200 REPLACE/SELECT pairs per trip', 3000, 2, () => classic.nextBatch('photos', 200), 200);
  results.push(classicBatch);
  print(classicBatch);
  await classic.close();

  const segment = new TicketClient(cfg, { mode: 'segment' });
  await throughput('warm-up', 1000, 1, () => segment.next('accounts'));
  const segSeq = await throughput('segment next(), sequential awaits', 4000, 1, () => segment.next('accounts'));
  results.push(segSeq);
  print(segSeq);
  const segLat = await timedLoop('segment next(), every call timed (latency)', 3000, () => segment.next('accounts'));
  results.push(segLat);
  print(segLat);
  const segBatch = await throughput('segment nextBatch(1000)', 2000, 1, () => segment.nextBatch('accounts', 1000), 1000);
  results.push(segBatch);
  print(segBatch);
  await segment.close();

  // Engine choice (docs/tickets.md): the same Tickets64 table as MyISAM and as InnoDB on one server.
  const admin = await mysql.createConnection({ socketPath: s0.socket!, user: userInfo().username, database: 'tickets', multipleStatements: true, supportBigNumbers: true, bigNumberStrings: true });
  const engineRows: string[] = [];
  for (const engine of ['MyISAM', 'InnoDB']) {
    const t = `engine_${engine.toLowerCase()}`;
    await admin.query(`DROP TABLE IF EXISTS ${t}; CREATE TABLE ${t} (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, stub CHAR(1) NOT NULL DEFAULT '', PRIMARY KEY (id), UNIQUE KEY stub (stub)) ENGINE=${engine}`);
    const q = `REPLACE INTO ${t} (stub) VALUES ('a'); SELECT LAST_INSERT_ID() AS id;`;
    const one = await timedLoop(`${engine} REPLACE+SELECT, 1 connection`, 2000, () => admin.query(q));
    const pool = mysql.createPool({ socketPath: s0.socket!, user: userInfo().username, database: 'tickets', multipleStatements: true, connectionLimit: 8 });
    let errors = 0;
    let firstError = '';
    const eight = await throughput(`${engine} REPLACE+SELECT, 8 connections`, 2000, 8, () => pool.query(q).catch((err: { code?: string }) => {
      errors++;
      firstError ||= String(err.code);
    }));
    await pool.end();
    const seg = await timedLoop(`${engine} segment UPDATE (K=1000)`, 2000, () => admin.query(`UPDATE ${t} SET id = LAST_INSERT_ID(id + 2000) WHERE stub = 'a'; SELECT LAST_INSERT_ID() AS id;`));
    print(one);
    print(eight);
    print(seg);
    engineRows.push(`${engine}: 1 conn ${fmt(rate(one))}/s (p99 ${one.p99us!.toFixed(0)} µs), 8 conns ${fmt(rate(eight))}/s with ${errors} failed statements${errors ? ` (${firstError})` : ''}, segment UPDATE ${fmt(rate(seg))} blocks/s`);
  }
  await admin.end();

  // Peer for scale: an in-process Snowflake generator (no coordination at all).
  const flake = new Snowflake(new Date('2020-01-01T00:00:00Z'));
  const flakeRes = await throughput('peer: @sapphire/snowflake generate() (async-wrapped)', 2000, 1, async () => flake.generate());
  results.push(flakeRes);
  print(flakeRes);

  console.log('');
  console.log(`classic client / raw mysql2 (same server):     ${(rate(oneSeq) / rate(rawSeq)).toFixed(2)}x`);
  console.log(`classic 2 servers / raw mysql2 1 server:       ${(rate(classicSeq) / rate(rawSeq)).toFixed(2)}x`);
  console.log(`segment / classic (sequential next()):         ${(rate(segSeq) / rate(classicSeq)).toFixed(0)}x   (target >= 100x)`);
  console.log(`segment / classic (best of each):              ${(Math.max(rate(segSeq), rate(segBatch)) / Math.max(rate(classicSeq), rate(classicConc), rate(classicBatch))).toFixed(0)}x`);
  console.log(`segment next() IDs/s:                          ${fmt(rate(segSeq))}   (target >= 1M in process)`);
  console.log(`p99 next(): classic ${classicSeq.p99us!.toFixed(1)} µs, segment ${segLat.p99us!.toFixed(2)} µs`);
  console.log(`segment / snowflake peer:                      ${(rate(segSeq) / rate(flakeRes)).toFixed(2)}x`);
  for (const row of engineRows) console.log(row);
} finally {
  await cluster.stop();
}
