import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultConfig, initTicketServers, ShardKitError, TicketClient, type TicketsConfigInput } from '../../src/index.js';
import { makeApp } from '../http/http-fixture.js';
import { scrapeValue } from '../http/scrape.js';
import { ticketsRoutes } from '../../src/http/routes/tickets-routes.js';
import { parity, SEQUENCES, startTicketCluster, type TicketCluster } from './ticket-cluster.js';

let cluster: TicketCluster;

before(async () => {
  cluster = await startTicketCluster(2);
  const results = await initTicketServers(cluster.config);
  assert.ok(results.every((r) => r.ok), JSON.stringify(results));
});

after(async () => {
  await cluster?.stop();
});

function isUnavailable(err: unknown): boolean {
  return err instanceof ShardKitError && err.code === 'TICKET_SERVERS_UNAVAILABLE' && err.status === 503;
}

test('tickets init: one MyISAM Tickets64 table per sequence on each server, with its stub row; running it again changes nothing', async () => {
  for (const inst of cluster.instances) {
    const rows = await inst.admin<Array<{ TABLE_NAME: string; ENGINE: string }>>("SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'tickets' ORDER BY TABLE_NAME");
    assert.deepEqual(rows.map((r) => r.TABLE_NAME), [...SEQUENCES].sort());
    assert.ok(rows.every((r) => r.ENGINE === 'MyISAM'));
    const cols = await inst.admin<Array<{ COLUMN_NAME: string; COLUMN_TYPE: string; EXTRA: string; COLUMN_KEY: string }>>("SELECT COLUMN_NAME, COLUMN_TYPE, EXTRA, COLUMN_KEY FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = 'tickets' AND TABLE_NAME = 'photos' ORDER BY ORDINAL_POSITION");
    assert.deepEqual(cols.map((c) => [c.COLUMN_NAME, c.COLUMN_TYPE, c.COLUMN_KEY]), [['id', 'bigint(20) unsigned', 'PRI'], ['stub', 'char(1)', 'UNI']]);
    assert.match(cols[0]!.EXTRA, /auto_increment/);
    const stub = await inst.admin<Array<{ n: unknown }>>('SELECT COUNT(*) AS n FROM tickets.photos');
    assert.equal(String(stub[0]!.n), '1');
  }
  const again = await initTicketServers(cluster.config);
  assert.ok(again.every((r) => r.ok && r.created.length === 0 && r.existing.length === SEQUENCES.length), JSON.stringify(again));
});

test('tickets init refuses a server whose auto_increment_offset differs from the config', async () => {
  const swapped: TicketsConfigInput = { ...cluster.config, servers: cluster.config.servers.map((s, i) => ({ ...s, offset: 2 - i })) };
  const results = await initTicketServers(swapped);
  assert.deepEqual(results.map((r) => r.ok), [false, false]);
  assert.match(results[0]!.error!, /auto_increment_offset=1; the config needs 2 and 2/);
});

test('a client never hands out an ID outside a server\'s configured residue', async () => {
  const swapped: TicketsConfigInput = { ...cluster.config, servers: cluster.config.servers.map((s, i) => ({ ...s, offset: 2 - i })) };
  const client = new TicketClient(swapped);
  try {
    await assert.rejects(client.next('photos'), (err: unknown) => isUnavailable(err) && /not ≡/.test((err as Error).message));
  } finally {
    await client.close();
  }
});

test('classic mode: round robin hands out odd and even IDs in turn; batches are unique', async () => {
  const client = new TicketClient(cluster.config);
  try {
    const ids: bigint[] = [];
    for (let i = 0; i < 6; i++) ids.push(await client.next('accounts'));
    for (let i = 1; i < ids.length; i++) assert.notEqual(parity(ids[i]!), parity(ids[i - 1]!), 'consecutive calls go to the other server');
    const batch = await client.nextBatch('accounts', 450);
    assert.equal(batch.length, 450);
    assert.equal(new Set([...ids, ...batch]).size, 456);
    assert.ok(batch.some((id) => id % 2n === 0n) && batch.some((id) => id % 2n === 1n));
    await assert.rejects(client.next('nope'), (err: unknown) => err instanceof ShardKitError && err.code === 'UNKNOWN_SEQUENCE');
    await assert.rejects(client.nextBatch('accounts', 0), (err: unknown) => err instanceof ShardKitError && err.code === 'INVALID_ARGUMENT');
  } finally {
    await client.close();
  }
});

test('/metrics after real tickets: IDs issued per sequence, each server up with its round trips', async () => {
  const client = new TicketClient(cluster.config);
  const f = await makeApp({ plugins: [ticketsRoutes(client)] });
  try {
    for (let i = 0; i < 4; i++) assert.equal((await f.app.inject({ method: 'POST', url: '/v1/tickets/groups', payload: {} })).statusCode, 200);
    assert.equal((await f.app.inject({ method: 'POST', url: '/v1/tickets/groups?count=10', payload: {} })).statusCode, 200);
    const body = (await f.app.inject({ method: 'GET', url: '/metrics' })).body;
    assert.equal(scrapeValue(body, 'shardkit_tickets_issued_total', { sequence: 'groups' }), 14);
    assert.equal(scrapeValue(body, 'shardkit_tickets_issued_total', { sequence: 'photos' }), 0);
    let trips = 0;
    for (const s of cluster.config.servers) {
      assert.equal(scrapeValue(body, 'shardkit_ticket_server_up', { server: s.name }), 1, s.name);
      assert.equal(scrapeValue(body, 'shardkit_ticket_server_errors_total', { server: s.name }), 0, s.name);
      const n = scrapeValue(body, 'shardkit_ticket_server_duration_seconds_count', { server: s.name });
      assert.ok(n >= 1, `round robin reaches ${s.name}`);
      trips += n;
    }
    assert.equal(trips, 5, 'one round trip per single ID, one for the batch of 10');
  } finally {
    await f.cleanup();
    await client.close();
  }
});

test('acceptance: 2 servers, 8 concurrent clients, 40,000 IDs; kill -9 one mid-run, the other carries on; after its restart both are used again', { timeout: 240_000 }, async (t) => {
  const TOTAL = 40_000;
  const [, victim] = cluster.instances as [typeof cluster.instances[0], typeof cluster.instances[0]];
  // A killed server refuses at once; the generous query timeout only keeps a loaded machine's slow
  // answers on the surviving server from counting as failures (the test is about failover, not speed).
  const config = { ...cluster.config, queryTimeoutMs: 30_000 };
  const clients = Array.from({ length: 8 }, () => new TicketClient(config, { mode: 'classic' }));
  const seen = new Set<bigint>();
  const duplicates: bigint[] = [];
  const byPhase = { before: { odd: 0, even: 0 }, down: { odd: 0, even: 0 }, restarted: { odd: 0, even: 0 } };
  let maxEvenBeforeKill = 0n;
  let minEvenAfterRestart: bigint | undefined;
  let phase: keyof typeof byPhase = 'before';
  let started = 0;
  let failures = 0;
  let slowestWhileDown = 0;
  const failureMessages: string[] = [];
  const record = (id: bigint, p: keyof typeof byPhase) => {
    if (seen.has(id)) duplicates.push(id);
    seen.add(id);
    byPhase[p][parity(id)]++;
    if (p === 'before' && id % 2n === 0n && id > maxEvenBeforeKill) maxEvenBeforeKill = id;
    if (p === 'restarted' && id % 2n === 0n && (minEvenAfterRestart === undefined || id < minEvenAfterRestart)) minEvenAfterRestart = id;
  };
  const worker = async (client: TicketClient, until: () => boolean) => {
    while (!until()) {
      started++;
      const p = phase;
      const t0 = performance.now();
      try {
        record(await client.next('photos'), p);
        if (p === 'down') slowestWhileDown = Math.max(slowestWhileDown, performance.now() - t0);
      } catch (err) {
        if (failures++ < 5) failureMessages.push(`${p}: ${String(err)}`);
      }
    }
  };
  const waitFor = async (cond: () => boolean) => {
    while (!cond()) await new Promise((r) => setTimeout(r, 20));
  };
  try {
    const workers = clients.map((c) => worker(c, () => started >= TOTAL));
    await waitFor(() => started >= 12_000);
    await victim.kill();
    phase = 'down';
    await waitFor(() => started >= 22_000);
    await victim.start();
    phase = 'restarted';
    await Promise.all(workers);
    // Had the run ended before the restarted server was probed again, keep going until it is.
    if (byPhase.restarted.even === 0) {
      let extra = 0;
      await Promise.all(clients.map((c) => worker(c, () => byPhase.restarted.even > 0 || ++extra > 200_000)));
    }
  } finally {
    await Promise.all(clients.map((c) => c.close()));
  }
  t.diagnostic(`IDs: ${seen.size}; before kill ${JSON.stringify(byPhase.before)}, while down ${JSON.stringify(byPhase.down)}, after restart ${JSON.stringify(byPhase.restarted)}; slowest next() while down: ${slowestWhileDown.toFixed(1)} ms (queryTimeoutMs ${config.queryTimeoutMs})`);
  assert.equal(duplicates.length, 0, `duplicates: ${duplicates.slice(0, 5).join(', ')}`);
  assert.equal(failures, 0, `no next() may fail while one server is down: ${failureMessages.join(' | ')}`);
  assert.ok(seen.size >= TOTAL);
  assert.ok(byPhase.before.odd > 0 && byPhase.before.even > 0, 'odd and even IDs both issued');
  assert.ok(byPhase.down.odd > 4_000, 'the surviving server kept issuing');
  assert.ok(byPhase.restarted.odd > 0 && byPhase.restarted.even > 0, 'both servers used again after the restart');
  assert.ok(minEvenAfterRestart! > maxEvenBeforeKill, 'the restarted server continues above every ID it issued before the kill');
});

test('IDs never repeat after a server restart, clean or kill -9', async () => {
  const client = new TicketClient({ ...cluster.config, retryAfterMs: 1 });
  try {
    const seen = new Set<bigint>();
    const take = async (n: number) => {
      for (const id of await client.nextBatch('groups', n)) {
        assert.ok(!seen.has(id), `duplicate ${id}`);
        seen.add(id);
      }
    };
    for (const how of ['stop', 'kill', 'kill'] as const) {
      await take(300);
      const maxOf = (r: bigint) => [...seen].filter((id) => id % 2n === r).reduce((a, b) => (b > a ? b : a), 0n);
      const max = { 0: maxOf(0n), 1: maxOf(1n) };
      await Promise.all(cluster.instances.map((i) => (how === 'stop' ? i.stop() : i.kill())));
      await assert.rejects(client.next('groups'), isUnavailable);
      await Promise.all(cluster.instances.map((i) => i.start()));
      await new Promise((r) => setTimeout(r, 5));
      const next: bigint[] = [];
      for (let i = 0; i < 10; i++) next.push(await client.next('groups'));
      assert.ok(next.every((id) => id > max[Number(id % 2n) as 0 | 1]), `after ${how}: ${next.join(',')} vs max ${max[0]}/${max[1]}`);
      assert.ok(next.some((id) => id % 2n === 0n) && next.some((id) => id % 2n === 1n));
      for (const id of next) {
        assert.ok(!seen.has(id));
        seen.add(id);
      }
    }
  } finally {
    await client.close();
  }
});

test('a slow (stopped) server is skipped within the timeouts and used again when it answers', { timeout: 60_000 }, async () => {
  const victim = cluster.instances[1]!;
  const client = new TicketClient({ ...cluster.config, connectTimeoutMs: 300, queryTimeoutMs: 300, retryAfterMs: 100 });
  const pid = victim.pid!;
  try {
    await client.nextBatch('photos', 20);
    process.kill(pid, 'SIGSTOP');
    const during: bigint[] = [];
    for (let i = 0; i < 100; i++) during.push(await client.next('photos'));
    assert.ok(during.every((id) => id % 2n === 1n), 'only the answering server issued');
    process.kill(pid, 'SIGCONT');
    let even = false;
    for (let i = 0; i < 100_000 && !even; i++) even = (await client.next('photos')) % 2n === 0n;
    assert.ok(even, 'the server rejoined after it answered again');
  } finally {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // already running
    }
    await client.close();
  }
});

test('segment mode: 8 clients that crash and restart, a classic client alongside, a server killed: no ID twice', { timeout: 240_000 }, async (t) => {
  const TOTAL = 100_000;
  const segment = { initialSize: 50, minSize: 10, maxSize: 4000 };
  const seen = new Set<bigint>();
  let duplicates = 0;
  const residues = { odd: 0, even: 0 };
  const record = (ids: bigint[]) => {
    for (const id of ids) {
      if (seen.has(id)) duplicates++;
      seen.add(id);
      residues[parity(id)]++;
    }
  };
  let taken = 0;
  let crashes = 0;
  let failures = 0;
  const segmentWorker = async (w: number) => {
    let client = new TicketClient(cluster.config, { mode: 'segment', segment });
    let sinceCrash = 0;
    try {
      while (taken < TOTAL) {
        const n = (w % 3 === 0) ? 1 + ((taken * 7) % 40) : 1;
        try {
          const ids = n === 1 ? [await client.next('offline_tasks')] : await client.nextBatch('offline_tasks', n);
          record(ids);
          taken += ids.length;
          sinceCrash += ids.length;
        } catch (err) {
          failures++;
          t.diagnostic(`segment worker ${w}: ${String(err)}`);
          await new Promise((r) => setTimeout(r, 10));
        }
        if (sinceCrash > 4000 + w * 500) {
          // A crash: the client is dropped with whatever it had reserved; a new one starts.
          void client.close();
          client = new TicketClient(cluster.config, { mode: 'segment', segment });
          sinceCrash = 0;
          crashes++;
        }
      }
    } finally {
      await client.close();
    }
  };
  const classic = new TicketClient(cluster.config);
  const classicWorker = async () => {
    while (taken < TOTAL) {
      try {
        record([await classic.next('offline_tasks')]);
      } catch {
        await new Promise((r) => setTimeout(r, 10));
      }
    }
  };
  const victim = cluster.instances[0]!;
  const killer = async () => {
    while (taken < TOTAL / 3) await new Promise((r) => setTimeout(r, 5));
    await victim.kill();
    while (taken < (2 * TOTAL) / 3) await new Promise((r) => setTimeout(r, 5));
    await victim.start();
  };
  try {
    await Promise.all([...Array.from({ length: 8 }, (_, w) => segmentWorker(w)), classicWorker(), killer()]);
  } finally {
    await classic.close();
    if (!victim.isRunning()) await victim.start();
  }
  t.diagnostic(`IDs ${seen.size}, crashes ${crashes}, residues ${JSON.stringify(residues)}, failed calls ${failures}`);
  assert.equal(duplicates, 0);
  assert.ok(seen.size >= TOTAL);
  assert.ok(crashes >= 8);
  assert.ok(residues.odd > 0 && residues.even > 0);
});

test('HTTP: POST /v1/tickets/{sequence}?count=n returns decimal string IDs; errors have stable codes', async () => {
  const client = new TicketClient(cluster.config, { mode: 'segment' });
  const f = await makeApp({ plugins: [ticketsRoutes(client)] });
  const app = f.app;
  try {
    const one = await app.inject({ method: 'POST', url: '/v1/tickets/photos', payload: {} });
    assert.equal(one.statusCode, 200);
    assert.equal(one.json().ids.length, 1);
    assert.match(one.json().ids[0], /^[1-9][0-9]*$/);
    const many = await app.inject({ method: 'POST', url: '/v1/tickets/photos?count=250', payload: {} });
    const ids: string[] = many.json().ids;
    assert.equal(ids.length, 250);
    assert.equal(new Set([...ids, one.json().ids[0]]).size, 251);
    const unknown = await app.inject({ method: 'POST', url: '/v1/tickets/nope?count=2', payload: {} });
    assert.equal(unknown.statusCode, 404);
    assert.equal(unknown.json().error.code, 'UNKNOWN_SEQUENCE');
    for (const bad of ['0', '-1', 'abc', '1.5', '10001']) {
      const res = await app.inject({ method: 'POST', url: `/v1/tickets/photos?count=${bad}`, payload: {} });
      assert.equal(res.statusCode, 400, bad);
      assert.equal(res.json().error.code, 'INVALID_ARGUMENT', bad);
    }
    const status = await app.inject({ method: 'GET', url: '/v1/tickets' });
    assert.deepEqual(status.json().sequences, SEQUENCES);
    assert.deepEqual(status.json().servers.map((s: { up: boolean }) => s.up), [true, true]);
  } finally {
    await f.cleanup();
    await client.close();
  }
});

test('CLI: tickets init and tickets next [--count] [--segment], one ID per line; bad input exits 2 with one line', { timeout: 60_000 }, () => {
  const file = join(cluster.dir, 'shardkit.json');
  writeFileSync(file, JSON.stringify({ ...defaultConfig(), tickets: cluster.config }, null, 2));
  const cli = (...args: string[]) => spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_OPTIONS: '' } });
  const init = cli('tickets', 'init', '--config', file);
  assert.equal(init.status, 0, init.stderr);
  assert.match(init.stdout, /\[2\/2\] ticket2: nothing to create/);
  const classic = cli('tickets', 'next', 'photos', '--count', '5', '--config', file);
  assert.equal(classic.status, 0, classic.stderr);
  const lines = classic.stdout.trim().split('\n');
  assert.equal(lines.length, 5);
  assert.ok(lines.every((l) => /^[1-9][0-9]*$/.test(l)));
  assert.equal(new Set(lines).size, 5);
  const seg = cli('tickets', 'next', 'photos', '--count', '1000', '--segment', '--config', file);
  assert.equal(seg.status, 0, seg.stderr);
  const segIds = seg.stdout.trim().split('\n');
  assert.equal(new Set([...segIds, ...lines]).size, 1005);
  const unknown = cli('tickets', 'next', 'nope', '--config', file);
  assert.equal(unknown.status, 2);
  assert.equal(unknown.stderr.trim().split('\n').length, 1);
  assert.match(unknown.stderr, /UNKNOWN_SEQUENCE/);
  const badCount = cli('tickets', 'next', 'photos', '--count', 'x', '--config', file);
  assert.equal(badCount.status, 2);
  assert.equal(badCount.stderr.trim().split('\n').length, 1);
});
