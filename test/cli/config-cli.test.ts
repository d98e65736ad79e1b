import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultConfig } from '../../src/config/config.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';

before(ensureBuilt);

test('serve, init and schema apply refuse a config whose schema maps two entities to one table: exit 2, one line naming both', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-clash-'));
  try {
    const config = defaultConfig({ shards: 16, pairs: 2 });
    config.schema!.mappings = [...config.schema!.mappings!, { name: 'lookup_email', from: 'user', to: 'user' }];
    const file = join(dir, 'shardkit.json');
    writeFileSync(file, JSON.stringify(config));
    const pattern = /^shardkit: INVALID_CONFIG: invalid schema: mapping lookup_email and keyspace email would both use the name lookup_email/;
    assertBadInput(await cli(['serve', '--config', file, '--data', dir, '--port', '0', '--no-widecolumn']), 'serve', pattern);
    assertBadInput(await cli(['init', '--config', file]), 'init', pattern);
    assertBadInput(await cli(['schema', 'apply', '--config', file]), 'schema apply', pattern);
    assert.equal(existsSync(join(dir, 'hosts')), false, 'nothing was created');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
