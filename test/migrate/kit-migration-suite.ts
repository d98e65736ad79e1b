/**
 * `shardkit migrate --from <embedded> --to <fleet>` against a real server fleet, written once and
 * run on MariaDB (kit-migration-mariadb.test.ts) and PostgreSQL (kit-migration-postgres.test.ts):
 * - a migration under a write load on the source (a ShardKit creating, patching, deleting objects,
 *   adding and removing mappings, putting and deleting lookups, with a ledger of acknowledged
 *   writes), catch-up runs, then --final while the writers go on: after it every source row is in
 *   the target byte for byte, every acknowledged write is there, the source refuses writes with a
 *   retryable SHARD_MOVING, a second run copies nothing, and ids continue past deleted ones;
 * - a source that never wrote some shards (an embedded store creates them lazily): the target
 *   still has every shard of its map, so the service restarted on it takes writes everywhere;
 * - kill -9 of the CLI mid-copy, then a rerun: the same result as an uninterrupted run;
 * - bad input (a target that holds other data, a missing file, --from = --to, a table option with
 *   a config source): one line, exit 2, the target unchanged.
 */
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { isShardKitError, ShardKitError } from '../../src/errors.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import { migrateKit } from '../../src/migrate/kit-migration.js';
import { CLI, ROOT, assertBadInput, cli, ensureBuilt } from '../cli/cli-harness.js';
import { StallProxy } from './stall-proxy.js';
import { diffDumps, dumpStore, keysOnModShard, makeEmbeddedStore, modShardFiles, openBackend } from './kit-migration-harness.js';

export interface MigrationTarget {
  /** The target fleet's config file. */
  configPath: string;
  /** Drops every shard of both fleets (a fresh target for the next test). */
  reset(): Promise<void>;
  stop(): Promise<void>;
}

/** A seeded random source, printed so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function kitMigrationSuite(name: string, start: () => Promise<MigrationTarget>): void {
  let target: MigrationTarget;
  const dirs: string[] = [];
  before(async () => {
    ensureBuilt();
    target = await start();
  });
  after(async () => {
    await target?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  test(`${name}: a migration under a write load, then --final: every source row and every acknowledged write is on the target`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    const seed = Number(process.env.SEED ?? Date.now() % 1_000_000);
    console.log(`# seed ${seed}`);
    const random = rng(seed);
    const kit = await ShardKit.open({ configPath: src.configPath, random });
    // The ledger: what every acknowledged write leaves behind.
    const objects = new Map<string, unknown>(); // id -> data, or null when deleted
    const mappings = new Map<string, boolean>(); // "board:pin" -> present
    const lookups = new Map<string, string | null>(); // key -> id, or null when deleted
    const boards: string[] = [];
    // Each writer below owns half the pins (and the mappings to them, and its own lookup keys):
    // two writers on one pin raced at their first, overlapping calls (one hard-deleted the pin
    // the other was patching or deleting: NOT_FOUND, ~1 seed in 9000, e.g. SEED=6174 or 15784),
    // and the ledger cannot know which of two overlapping writes to one row landed last.
    const owner = new Map<string, number>(); // pin id -> writer
    // Lookups go to half the mod shards until --final starts; from then on the writers also put
    // and remove keys on mod shards 4 and 5, and once --final has returned on 6 and 7, whose files
    // do not exist yet: a first put there makes the file during or after the cutover (issue 26:
    // such puts were acknowledged after the last copy, and never copied).
    const hot = new Set([0, 1, 2, 3]);
    let cutoverDone = false;
    let lateLookups = 0;
    const coldKey = async (w: number, n: number) => {
      const want = cutoverDone ? [6, 7] : [4, 5];
      for (let i = 0; ; i++) if (want.includes(await kit.lookups.shardOf(`cold-w${w}-${n}-${i}`))) return `cold-w${w}-${n}-${i}`;
    };
    const hotKeys: string[][] = [[], []];
    for (let i = 0; hotKeys[0]!.length < 100 || hotKeys[1]!.length < 100; i++) {
      for (const w of [0, 1]) if (hotKeys[w]!.length < 100 && hot.has(await kit.lookups.shardOf(`w${w}.${i}@example.com`))) hotKeys[w]!.push(`w${w}.${i}@example.com`);
    }
    let finalStarted = false;
    const coldPut: string[][] = [[], []];
    for (let i = 0; i < 40; i++) {
      const b = await kit.objects.create('board', { name: `board ${i}`, text: 'é\u0000"\\ ✓' });
      boards.push(String(b.id));
      objects.set(String(b.id), b.data);
    }
    for (let i = 0; i < 600; i++) {
      const board = boards[i % boards.length]!;
      const p = await kit.objects.create('pin', { n: i, note: 'x'.repeat(i % 50) }, { near: board });
      objects.set(String(p.id), p.data);
      owner.set(String(p.id), i % 2);
      await kit.mappings.add('board_has_pins', board, p.id);
      mappings.set(`${board}:${p.id}`, true);
      if (i % 3 === 0 && hot.has(await kit.lookups.shardOf(`user${i}@example.com`))) {
        await kit.lookups.put('email', `user${i}@example.com`, p.id);
        lookups.set(`user${i}@example.com`, String(p.id));
      }
    }
    let writing = true;
    let acknowledged = 0;
    const refused: string[] = [];
    const pins = (w: number) => [...objects.entries()].filter(([id, d]) => d !== null && owner.get(id) === w).map(([id]) => id);
    const writer = async (w: number) => {
      let n = 0;
      while (writing) {
        const op = Math.floor(random() * 6);
        n++;
        try {
          if (op === 0) {
            const board = boards[Math.floor(random() * boards.length)]!;
            const p = await kit.objects.create('pin', { w: n }, { near: board });
            objects.set(String(p.id), p.data);
            owner.set(String(p.id), w);
          } else if (op === 1) {
            const list = pins(w);
            const id = list[Math.floor(random() * list.length)]!;
            const o = await kit.objects.patch(id, { patched: n });
            objects.set(id, o.data);
          } else if (op === 2) {
            const list = pins(w);
            const id = list[Math.floor(random() * list.length)]!;
            await kit.objects.delete(id, { hard: true });
            objects.set(id, null);
          } else if (op === 3) {
            const board = boards[Math.floor(random() * boards.length)]!;
            const list = pins(w);
            const pin = list[Math.floor(random() * list.length)]!;
            await kit.mappings.add('board_has_pins', board, pin);
            mappings.set(`${board}:${pin}`, true);
          } else if (op === 4) {
            const keys = [...mappings.entries()].filter(([k, v]) => v && owner.get(k.split(':')[1]!) === w).map(([k]) => k);
            const k = keys[Math.floor(random() * keys.length)]!;
            const [b, p] = k.split(':');
            await kit.mappings.remove('board_has_pins', b!, p!);
            mappings.set(k, false);
          } else {
            const cold = finalStarted && random() < 0.5;
            const fresh = cold && (coldPut[w]!.length === 0 || random() < 0.7);
            const key = !cold ? hotKeys[w]![Math.floor(random() * 100)]! : fresh ? await coldKey(w, n) : coldPut[w]![Math.floor(random() * coldPut[w]!.length)]!;
            if (cutoverDone) lateLookups++;
            if (fresh) coldPut[w]!.push(key);
            if (!cold ? random() < 0.7 : fresh) {
              const list = pins(w);
              const id = list[Math.floor(random() * list.length)]!;
              await kit.lookups.put('email', key, id);
              lookups.set(key, id);
            } else {
              await kit.lookups.delete('email', key);
              lookups.set(key, null);
            }
          }
          acknowledged++;
        } catch (err) {
          // Refused by the cutover's fence: not acknowledged, nothing written (a client retries).
          if (!isShardKitError(err, 'SHARD_MOVING')) throw err;
          refused.push(err.message);
          await new Promise((r) => setTimeout(r, 5));
        }
        // Let the migrator run between writes (SQLite calls are synchronous in this process).
        await new Promise((r) => setImmediate(r));
      }
    };
    let writerError: unknown;
    const writers = [writer(0), writer(1)].map((w) => w.catch((err) => { writerError ??= err; }));
    try {
      const first = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 64 });
      assert.ok(first.rounds[0]!.upserts > 0, 'the first run copies');
      const second = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 64 });
      assert.ok(second.rounds.length >= 1);
      const beforeFinal = acknowledged;
      // Wait for more writes, so the final pass has a delta to copy.
      while (acknowledged < beforeFinal + 50 && writerError === undefined) await new Promise((r) => setTimeout(r, 10));
      finalStarted = true;
      const final = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 64, final: true });
      assert.ok(final.final, 'the final run says it cut over');
      assert.ok(final.nextSteps.some((s) => /restart/.test(s)), 'it says what the operator does next');
      // Writes after the cutover: refused, retryable.
      const refusedBefore = refused.length;
      cutoverDone = true;
      while ((refused.length < refusedBefore + 5 || lateLookups < 10) && writerError === undefined) await new Promise((r) => setTimeout(r, 10));
    } finally {
      writing = false;
      await Promise.all(writers);
    }
    if (writerError) throw writerError;
    assert.ok(refused.length > 0, 'writes after the fence were refused');
    assert.match(refused[refused.length - 1]!, /read-only/);
    // The source is read-only for good: a write through a fresh kit is refused too.
    await assert.rejects(kit.objects.create('board', { late: true }), (err: unknown) => isShardKitError(err, 'SHARD_MOVING'));
    await kit.close();

    // Every source row is on the target, byte for byte, and nothing else.
    const [a, b] = [await dumpStore(src.configPath), await dumpStore(target.configPath)];
    assert.deepEqual(diffDumps(a, b), [], 'source and target differ');
    assert.equal(a.size, b.size);
    assert.ok(a.size > 1000, `rows compared: ${a.size}`);

    // Every acknowledged write, read back through a ShardKit on the target by its old ID.
    const tk = await ShardKit.open({ configPath: target.configPath });
    try {
      for (const [id, data] of objects) {
        if (data === null) await assert.rejects(tk.objects.get(id), (err: unknown) => isShardKitError(err, 'NOT_FOUND'), `deleted ${id}`);
        else assert.deepEqual((await tk.objects.get(id)).data, data, `object ${id}`);
      }
      for (const [k, present] of mappings) {
        const [from, to] = k.split(':');
        const page = await tk.mappings.list('board_has_pins', from!, { limit: 1000 });
        assert.equal(page.items.some((i) => String(i.id) === to), present, `mapping ${k}`);
      }
      const lost: string[] = [];
      for (const [key, id] of lookups) {
        const got = await tk.lookups.get('email', key);
        if ((got === undefined ? null : String(got)) !== id) lost.push(`lookup ${key}: ${got ?? 'missing'} on the target, want ${id ?? 'absent'}`);
      }
      const cold = [...lookups.keys()].filter((k) => k.startsWith('cold-')).length;
      console.log(`# ${name}: ${lookups.size} lookup keys in the ledger (${cold} on mod shards first written during --final), ${lost.length} acknowledged lookup writes lost`);
      assert.deepEqual(lost, [], 'acknowledged lookup writes lost');
      // New objects on the target never reuse a local id the source handed out (deleted ones included).
      const { backend: sb, map } = await openBackend(src.configPath);
      try {
        for (let shard = 0; shard < 8; shard++) {
          const hw = await sb.objectIdHighWater({ host: map.locate(shard).master, shard, fleet: 'objects' }, 'pins');
          const o = await tk.objects.create('pin', { after: true }, { shard });
          assert.ok(pinterestId.decode(o.id).localId > hw, `shard ${shard}: new local id ${pinterestId.decode(o.id).localId} > ${hw}`);
          await tk.objects.delete(o.id, { hard: true });
        }
      } finally {
        await sb.close();
      }
    } finally {
      await tk.close();
    }

    // A second run copies nothing.
    const again = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 64 });
    for (const r of again.rounds) assert.equal(r.upserts + r.deletes, 0, `round ${r.round} copied ${r.upserts + r.deletes}`);
    console.log(`# ${name}: ${acknowledged} acknowledged writes during the migration, ${refused.length} refused by the cutover, ${a.size} rows compared, 0 acknowledged writes lost`);
  });

  test(`${name}: lookup puts and removals during --final, at the fence and after the last copy: every acknowledged one is on the target (issue 26)`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    const kit = await ShardKit.open({ configPath: src.configPath });
    const { withObjects, ownFile } = modShardFiles(src.configPath);
    assert.ok(ownFile.length >= 3, `mod shards with a file of their own: ${ownFile}`);
    // Objects in every object shard, lookups in one mod shard only: the other mod shards have no
    // file yet (a first put makes it) or, where a host keeps both fleets in one file (withObjects,
    // none in this map), a file that holds objects only (a first put adds the lookup tables).
    const board = await kit.objects.create('board', { b: 1 });
    for (let shard = 0; shard < 8; shard++) await kit.objects.create('pin', { shard }, { shard });
    const shardOf = (k: string) => kit.lookups.shardOf(k);
    const hot = await keysOnModShard(shardOf, 'hot-', ownFile[0]!, 2);
    for (const k of hot) await kit.lookups.put('email', k, board.id);
    const ledger = new Map<string, string | null>(hot.map((k) => [k, String(board.id)]));
    const outcomes: string[] = [];
    // Puts to a file that holds objects only and to a shard with no file, and a removal, through the
    // running kit; each is acknowledged (and then must be on the target) or refused, retryable.
    const write = async (step: string, keys: string[], removal: string) => {
      for (const k of keys) {
        try {
          await kit.lookups.put('email', k, board.id);
          ledger.set(k, String(board.id));
          outcomes.push(`${step}: put ${k} (mod shard ${await shardOf(k)}) acknowledged`);
        } catch (err) {
          if (!isShardKitError(err, 'SHARD_MOVING')) throw err;
        }
      }
      try {
        await kit.lookups.delete('email', removal);
        ledger.set(removal, null);
        outcomes.push(`${step}: removal of ${removal} acknowledged`);
      } catch (err) {
        if (!isShardKitError(err, 'SHARD_MOVING')) throw err;
      }
    };
    const pick = async (prefix: string, shards: Array<number | undefined>) => (await Promise.all(shards.filter((m) => m !== undefined).map((m) => keysOnModShard(shardOf, prefix, m!, 1)))).flat();
    const atFence = await pick('fenced-', [ownFile[1], withObjects[1]]);
    const afterCopy = await pick('copied-', [ownFile[2], withObjects[2]]);
    // A catch-up run first, as an operator does: the --final run then opens the files it read before.
    await migrateKit({ from: src.configPath, to: target.configPath });
    const final = await migrateKit({
      from: src.configPath, to: target.configPath, final: true,
      onStep: (step) => (step === 'fenced' ? write(step, atFence, hot[0]!) : step === 'copied' ? write(step, afterCopy, hot[1]!) : undefined),
    });
    assert.ok(final.final);
    const tk = await ShardKit.open({ configPath: target.configPath });
    const lost: string[] = [];
    try {
      for (const [k, id] of ledger) {
        const got = await tk.lookups.get('email', k);
        if ((got === undefined ? null : String(got)) !== id) lost.push(`lookup ${k} (mod shard ${await shardOf(k)}): ${got === undefined ? 'missing' : String(got)} on the target, want ${id ?? 'absent'}`);
      }
    } finally {
      await tk.close();
      await kit.close();
    }
    console.log(`# ${name}: ${outcomes.length} lookup writes acknowledged during --final, ${lost.length} lost`);
    assert.deepEqual(lost, [], `acknowledged lookup writes lost:\n${lost.join('\n')}\n(acknowledged: ${outcomes.join('; ')})`);
    // Once fenced, the source refuses them all (a client retries them on the target).
    assert.deepEqual(outcomes, []);
    assert.deepEqual(diffDumps(await dumpStore(src.configPath), await dumpStore(target.configPath)), [], 'source and target differ');
  });

  test(`${name}: a chunk whose target write fails for a passing reason is retried, and the migration completes with nothing lost`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    const kit = await ShardKit.open({ configPath: src.configPath });
    const board = await kit.objects.create('board', { b: 1 });
    for (let i = 0; i < 300; i++) {
      const p = await kit.objects.create('pin', { i }, { shard: i % 8 });
      await kit.mappings.add('board_has_pins', board.id, p.id);
      await kit.lookups.put('email', `r${i}@example.com`, p.id);
    }
    // The target fails a chunk now and then, as MariaDB under load did once in issue 26
    // (PROTOCOL_SEQUENCE_TIMEOUT, mapped to SHARD_UNAVAILABLE like every query timeout), twice in
    // a row once: each failed chunk is synced again after a backoff.
    let chunks = 0;
    const failAt = new Set([3, 10, 11, 25]);
    const inject = (step: string) => {
      if (step !== 'chunk-write' || !failAt.has(++chunks)) return;
      throw new ShardKitError('SHARD_UNAVAILABLE', `shard on the target is unavailable: PROTOCOL_SEQUENCE_TIMEOUT: Query inactivity timeout (injected, chunk ${chunks})`);
    };
    const first = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 16, onStep: inject });
    const final = await migrateKit({ from: src.configPath, to: target.configPath, chunkRows: 16, final: true, onStep: inject });
    await kit.close();
    assert.ok(final.final);
    const retries = [...first.rounds, ...final.rounds].reduce((n, r) => n + r.retries, 0);
    assert.ok(chunks >= 25, `chunk writes: ${chunks}`);
    assert.equal(retries, 4, 'each injected failure was retried');
    const [a, b] = [await dumpStore(src.configPath), await dumpStore(target.configPath)];
    assert.deepEqual(diffDumps(a, b), [], 'source and target differ');
    assert.ok(a.size > 900, `rows compared: ${a.size}`);
  });

  test(`${name}: the target stalls a query mid-copy (a TCP proxy holds it until the client's query timeout): the chunk is retried and nothing is lost`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    const kit = await ShardKit.open({ configPath: src.configPath });
    for (let i = 0; i < 200; i++) {
      const p = await kit.objects.create('pin', { i }, { shard: i % 8 });
      await kit.lookups.put('email', `s${i}@example.com`, p.id);
    }
    await kit.close();
    // The same target through proxies, with a 1 s query timeout.
    const config = JSON.parse(readFileSync(target.configPath, 'utf8'));
    const proxies: StallProxy[] = [];
    for (const h of Object.values(config.hosts) as Array<{ host: string; port: number }>) {
      const proxy = await StallProxy.start(h.host, h.port);
      proxies.push(proxy);
      h.host = '127.0.0.1';
      h.port = proxy.port;
    }
    config.storage.queryTimeoutMs = 1000;
    const viaProxy = join(dirname(target.configPath), 'via-stall-proxy.json');
    writeFileSync(viaProxy, `${JSON.stringify(config, null, 2)}\n`);
    try {
      let chunks = 0;
      const stallFifth = (step: string) => {
        if (step === 'chunk-write' && ++chunks === 5) for (const p of proxies) p.stallNext();
      };
      const first = await migrateKit({ from: src.configPath, to: viaProxy, chunkRows: 16, onStep: stallFifth });
      const final = await migrateKit({ from: src.configPath, to: viaProxy, chunkRows: 16, final: true });
      assert.ok(final.final);
      assert.ok(proxies.some((p) => p.stalled > 0), 'a query was held');
      assert.ok(first.rounds.reduce((n, r) => n + r.retries, 0) >= 1, 'the stalled chunk was retried');
    } finally {
      for (const p of proxies) await p.stop();
      rmSync(viaProxy, { force: true });
    }
    const [a, b] = [await dumpStore(src.configPath), await dumpStore(target.configPath)];
    assert.deepEqual(diffDumps(a, b), [], 'source and target differ');
    assert.ok(a.size >= 400, `rows compared: ${a.size}`);
  });

  test(`${name}: a source that never wrote some shards: after --final, every shard of the target takes writes`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    // An embedded store creates a shard on its first write: this one has object shard 2 only.
    const kit = await ShardKit.open({ configPath: src.configPath });
    const board = await kit.objects.create('board', { only: 2 }, { shard: 2 });
    await kit.close();
    const final = await migrateKit({ from: src.configPath, to: target.configPath, final: true });
    assert.ok(final.final);
    const tk = await ShardKit.open({ configPath: target.configPath });
    try {
      assert.deepEqual((await tk.objects.get(board.id)).data, { only: 2 });
      for (let shard = 0; shard < 8; shard++) {
        const o = await tk.objects.create('board', { shard }, { shard });
        const p = await tk.objects.create('pin', { shard }, { shard });
        await tk.mappings.add('board_has_pins', o.id, p.id);
        assert.deepEqual((await tk.objects.get(o.id)).data, { shard });
        assert.equal((await tk.mappings.list('board_has_pins', o.id)).items[0]?.id, p.id);
      }
      // Enough keys that every mod shard gets one.
      for (let i = 0; i < 200; i++) await tk.lookups.put('email', `k${i}@example.com`, board.id);
      assert.equal(await tk.lookups.get('email', 'k199@example.com'), board.id);
    } finally {
      await tk.close();
    }
  });

  test(`${name}: kill -9 of the CLI mid-copy, then a rerun, gives the same target`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    // A source big enough that the copy takes a while: rows written straight into the shard files.
    const { backend, map } = await openBackend(src.configPath);
    try {
      for (let shard = 0; shard < 8; shard++) {
        const ref = { host: map.locate(shard).master, shard, fleet: 'objects' as const };
        for (let start = 1; start <= 3000; start += 1000) {
          await backend.putObjectRows(ref, 'pins', Array.from({ length: 1000 }, (_, i) => ({ localId: start + i, data: JSON.stringify({ shard, i: start + i }), createdAt: new Date(1_700_000_000_000 + i) })));
          await backend.putMappingRows(ref, 'board_has_pins', Array.from({ length: 1000 }, (_, i) => ({ fromId: pinterestId.encode({ shard, type: 2, localId: 1 + (i % 10) }), toId: pinterestId.encode({ shard, type: 1, localId: start + i }), sequence: start + i })));
        }
        await backend.putLookupRows({ host: map.locateModShard(shard).master, shard, fleet: 'lookups' }, 'lookup_email', Array.from({ length: 500 }, (_, i) => ({ key: `k${shard}-${i}`, value: BigInt(i + 1) })));
      }
    } finally {
      await backend.close();
    }
    const child = spawn(process.execPath, [CLI, 'migrate', '--from', src.configPath, '--to', target.configPath, '--chunk-rows', '200', '--concurrency', '1'], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    // Killed at its first progress line after the start: a second or so into the copy.
    await new Promise<void>((resolve) => {
      child.stderr.on('data', (d: Buffer) => {
        stderr += d.toString();
        if (/"msg":"migrate round 1 \(copy\) progress"/.test(stderr)) resolve();
      });
      void exited.then(() => resolve());
    });
    child.kill('SIGKILL');
    const code = await exited;
    console.log(`# ${name}: the first run ${code === null ? 'was killed mid-copy' : `ended (${code}) before the kill`}`);
    const partial = await dumpStore(target.configPath);
    const r1 = await cli(['migrate', '--from', src.configPath, '--to', target.configPath, '--json']);
    assert.equal(r1.code, 0, r1.stderr);
    const report = JSON.parse(r1.stdout) as { rounds: Array<{ upserts: number; deletes: number }> };
    const copied = report.rounds.reduce((n, r) => n + r.upserts, 0);
    const a = await dumpStore(src.configPath);
    assert.equal(copied, a.size - partial.size, 'the rerun copies exactly what the killed run had not');
    assert.deepEqual(diffDumps(a, await dumpStore(target.configPath)), []);
    const r2 = await cli(['migrate', '--from', src.configPath, '--to', target.configPath, '--final', '--json']);
    assert.equal(r2.code, 0, r2.stderr);
    const fin = JSON.parse(r2.stdout) as { rounds: Array<{ upserts: number; deletes: number }>; final?: unknown };
    assert.ok(fin.final);
    for (const r of fin.rounds) assert.equal(r.upserts + r.deletes, 0);
    assert.deepEqual(diffDumps(a, await dumpStore(target.configPath)), []);
  });

  test(`${name}: bad input is one line, exit 2, and changes nothing`, async () => {
    await target.reset();
    const src = makeEmbeddedStore();
    dirs.push(src.dir);
    const kit = await ShardKit.open({ configPath: src.configPath });
    await kit.objects.create('board', { name: 'mine' }, { shard: 3 });
    await kit.close();
    // A target holding other data in a shard the source has.
    const { backend: tb, map: tmap } = await openBackend(target.configPath);
    await tb.createShard({ host: tmap.locate(3).master, shard: 3, fleet: 'objects' });
    await tb.close();
    const tk = await ShardKit.open({ configPath: target.configPath });
    const other = await tk.objects.create('pin', { theirs: true }, { shard: 3 });
    await tk.close();
    const before = await dumpStore(target.configPath);
    assertBadInput(await cli(['migrate', '--from', src.configPath, '--to', target.configPath]), 'target with other data', /ALREADY_EXISTS: .*shard 3/);
    assert.deepEqual(diffDumps(before, await dumpStore(target.configPath)), []);
    assert.equal(before.size, 1, `only ${other.id} is on the target`);
    assertBadInput(await cli(['migrate', '--from', `${src.dir}/missing.json`, '--to', target.configPath]), 'missing --from', /no such file/);
    assertBadInput(await cli(['migrate', '--from', src.configPath, '--to', `${src.dir}/nope.json`]), 'missing --to', /no such file/);
    assertBadInput(await cli(['migrate', '--from', src.configPath, '--to', src.configPath]), '--from = --to', /same config file/);
    assertBadInput(await cli(['migrate', '--from', src.configPath, '--to', target.configPath, '--query', 'SELECT 1']), 'table option', /--query is for a table source/);
    assertBadInput(await cli(['migrate', '--from', target.configPath, '--to', src.configPath]), 'a server fleet as the source', /must be an embedded store/);
    assert.deepEqual(diffDumps(before, await dumpStore(target.configPath)), []);
  });
}
