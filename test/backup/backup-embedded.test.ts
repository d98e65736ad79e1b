import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { assertBadInput, cli } from '../cli/cli-harness.js';
import { newLedger, type Ledger } from '../failover/ledger.js';
import { until, present } from './backup-helpers.js';

/**
 * Writers creating pins until `stop` resolves. The embedded engine answers without I/O waits, so
 * each writer yields to the event loop between writes (the backup command runs in this process).
 */
async function embeddedLoad(kits: ShardKit[], shards: number[], stop: Promise<void>, ledger: Ledger): Promise<void> {
  let done = false;
  void stop.then(() => (done = true));
  let n = 0;
  await Promise.all(kits.flatMap((kit) => [0, 1].map(async () => {
    while (!done) {
      const sentAt = Date.now();
      const o = await kit.objects.create('pin', { n: n++ }, { shard: shards[n % shards.length]! });
      ledger.acked.push({ id: o.id, at: Date.now(), sentAt });
      await new Promise((r) => setImmediate(r));
    }
  })));
}

describe('shardkit backup on the embedded default (SQLite online backup API)', () => {
  let dir: string;
  let to: string;
  let config: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'shardkit-bk-emb-'));
    to = mkdtempSync(join(tmpdir(), 'shardkit-bk-emb-to-'));
    config = join(dir, 'shardkit.json');
    writeFileSync(config, JSON.stringify(defaultConfig({ shards: 16, pairs: 2 })));
  });
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    rmSync(to, { recursive: true, force: true });
  });

  test('ledger: writes through two services, a backup while they write, more writes; restore: every write acknowledged before the backup is back, none sent after it', async () => {
    const kits = await Promise.all([0, 1].map(() => ShardKit.open({ configPath: config, dataDir: dir })));
    const ledger = newLedger();
    let release!: () => void;
    const load = embeddedLoad(kits, [0, 3, 5, 9, 12, 15], new Promise<void>((r) => (release = r)), ledger);
    let started = 0;
    let ended = 0;
    try {
      await until('writes before the backup', () => ledger.acked.length >= 200);
      started = Date.now();
      const r = await cli(['backup', 'create', '--config', config, '--to', to, '--json']);
      ended = Date.now();
      assert.equal(r.code, 0, r.stderr);
      const m = JSON.parse(r.stdout) as { engine: string; units: Array<{ files: string[] }> };
      assert.equal(m.engine, 'sqlite');
      assert.equal(m.units[0]!.files.length, 6, 'the six shard files written to');
      await until('writes after the backup', () => ledger.acked.filter((a) => a.sentAt! > ended).length >= 50);
    } finally {
      release();
      await load;
    }
    const refused = await cli(['backup', 'restore', '--config', config, '--from', to]);
    assert.equal(refused.code, 2, refused.stderr);
    assert.match(refused.stderr, /PRECONDITION_FAILED: .*stop the service first/);
    await Promise.all(kits.map((k) => k.close()));

    const r = await cli(['backup', 'restore', '--config', config, '--from', to]);
    assert.equal(r.code, 0, r.stderr);
    const kit = await ShardKit.open({ configPath: config, dataDir: dir });
    try {
      const before = ledger.acked.filter((a) => a.at < started).map((a) => a.id);
      const afterwards = ledger.acked.filter((a) => a.sentAt! > ended).map((a) => a.id);
      assert.equal(await present(kit, before), before.length, 'every write acknowledged before the backup is back');
      assert.equal(await present(kit, afterwards), 0, 'no write sent after the backup is there');
    } finally {
      await kit.close();
    }
  });

  test('a backup taken while no service runs, then a restore without --force: not refused (the -wal the backup\'s reader left is no open service); the backup\'s state is back', async () => {
    // Before: the backup's read-only connections left -wal/-shm beside every file, and restore
    // took any -wal for a running service: PRECONDITION_FAILED unless --force.
    const aside = mkdtempSync(join(tmpdir(), 'shardkit-bk-emb-idle-'));
    try {
      let kit = await ShardKit.open({ configPath: config, dataDir: dir });
      const kept = await kit.objects.create('pin', { n: 'kept' }, { shard: 7 });
      await kit.close();
      const r = await cli(['backup', 'create', '--config', config, '--to', aside]);
      assert.equal(r.code, 0, r.stderr);
      kit = await ShardKit.open({ configPath: config, dataDir: dir });
      const later = await kit.objects.create('pin', { n: 'later' }, { shard: 7 });
      await kit.close();
      const restored = await cli(['backup', 'restore', '--config', config, '--from', aside]);
      assert.equal(restored.code, 0, restored.stderr);
      kit = await ShardKit.open({ configPath: config, dataDir: dir });
      try {
        assert.equal(await present(kit, [kept.id]), 1);
        assert.equal(await present(kit, [later.id]), 0);
      } finally {
        await kit.close();
      }
    } finally {
      rmSync(aside, { recursive: true, force: true });
    }
  });

  test('verify restores every file aside and matches the manifest; list shows it', async () => {
    const ok = await cli(['backup', 'verify', '--config', config, '--from', to, '--json']);
    assert.equal(ok.code, 0, ok.stderr);
    const report = JSON.parse(ok.stdout) as { differing: string[]; rows: number };
    assert.deepEqual(report.differing, []);
    assert.ok(report.rows >= 200);
    const list = await cli(['backup', 'list', '--from', to]);
    assert.equal(list.code, 0, list.stderr);
    assert.match(list.stdout, /^\d{8}T\d{9}Z {2}sqlite 1 pair\(s\)/);
    assert.equal(readdirSync(to).length, 1);
    // A mistyped --from is named, not listed as an empty directory.
    assertBadInput(await cli(['backup', 'list', '--from', `${to}-typo`]), 'a --from that does not exist', /NOT_FOUND: no directory .*-typo/);
  });

  test('restore --to-time is refused, saying why (no log to archive) and what to do instead; nothing changed', async () => {
    const r = await cli(['backup', 'restore', '--config', config, '--from', to, '--to-time', new Date().toISOString()]);
    assertBadInput(r, '--to-time on the embedded default', /INVALID_ARGUMENT: restore --to-time needs a log archive, which the embedded default has none of .*take backups as often as the data you can lose.*: nothing changed/);
  });
});
