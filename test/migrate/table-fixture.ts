import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { defaultShardMapJson } from '../../src/topology/shard-map.js';
import type { MigrateIo } from '../../src/cli/actions/migrate-table.js';

/** An embedded (SQLite) target in a fresh dir, with the schema a pins/boards migration needs. */
export function embeddedTarget(root: string): string {
  const dir = mkdtempSync(join(root, 'target-'));
  // 16 mod shards, not the default 4096: each lookup key would otherwise open (and first create) its own SQLite file.
  const config = defaultConfig({ shards: 16, pairs: 2 }) as { shardMap: unknown; schema: { types: unknown[]; keyspaces: unknown[] } };
  config.shardMap = defaultShardMapJson({ shards: 16, pairs: 2, modShards: 16 });
  config.schema.types.push({ name: 'migration', id: 1000 });
  config.schema.keyspaces.push('pin_old_id', 'board_old_id', 'pin2_old_id');
  const path = join(dir, 'shardkit.json');
  writeFileSync(path, `${JSON.stringify(config, null, 2)}\n`);
  return path;
}

/** An io that keeps what the action prints (JSON lines: no TTY). */
export function captureIo(): MigrateIo & { out: string; err: string } {
  const io = {
    out: '',
    err: '',
    isTTY: false,
    stdout(t: string) {
      io.out += t;
    },
    stderr(t: string) {
      io.err += t;
    },
    signal: new AbortController().signal,
  };
  return io;
}

export function tempRoot(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix));
}
