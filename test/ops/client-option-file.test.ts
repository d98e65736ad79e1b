/**
 * The admin password of a `--config` fleet reaches mariadb, mariadb-dump and mariadb-binlog through
 * an option file readable by this user only, never on their command lines (which `ps` shows to
 * every user of the machine). The real tools reading it: test/backup/backup-fleet-config.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, statSync } from 'node:fs';
import { configHostAdmin } from '../../src/ops/failover/host-admin.js';
import type { ShardKitConfig } from '../../src/config/config.js';

const config = { hosts: { MySQL001A: { host: '10.0.1.1', port: 3307 } } } as unknown as ShardKitConfig;

test('clientArgs carry the admin password in a 0600 option file given first, not as --password=', () => {
  const password = 'pa"ss\\word s3cret';
  const admin = configHostAdmin(config, { SHARDKIT_ADMIN_USER: 'ops', SHARDKIT_ADMIN_PASSWORD: password, SHARDKIT_REPL_USER: 'repl' });
  const args = admin.clientArgs('MySQL001A');
  assert.ok(args.every((a) => !a.includes('s3cret')), `the password is on the command line: ${args.join(' ')}`);
  assert.match(args[0]!, /^--defaults-extra-file=/, 'the option file must be the first argument');
  assert.deepEqual(args.slice(1), ['--host=10.0.1.1', '--port=3307', '--user=ops']);
  const file = args[0]!.slice('--defaults-extra-file='.length);
  assert.equal(statSync(file).mode & 0o777, 0o600);
  assert.equal(readFileSync(file, 'utf8'), '[client]\npassword="pa\\"ss\\\\word s3cret"\n');
  assert.equal(admin.clientArgs('MySQL001A')[0], args[0], 'one file per process and password');
});

test('no admin password: no option file', () => {
  const admin = configHostAdmin(config, { SHARDKIT_ADMIN_USER: 'ops', SHARDKIT_REPL_USER: 'repl' });
  assert.deepEqual(admin.clientArgs('MySQL001A'), ['--host=10.0.1.1', '--port=3307', '--user=ops']);
});
