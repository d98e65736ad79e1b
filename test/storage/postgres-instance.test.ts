/**
 * PostgresInstance (src/ops/postgres/postgres-instance.ts), the local servers of the PostgreSQL
 * tests: startServer() is ready only when its own server answers. Another server on the same port
 * (one that took it between pickFreePort and the bind, or while this one was stopped) answers the
 * readiness query too, while this one fails to bind and exits.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chownSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PostgresInstance, type PostgresInstanceOptions } from '../../src/ops/postgres/postgres-instance.js';

// The constructor and initdb() are private: the test builds a second instance on a port it chooses.
type Internals = { initdb(): Promise<void> };
type RunAs = { uid: number; gid: number } | undefined;
const construct = PostgresInstance as unknown as new (dir: string, port: number, options: PostgresInstanceOptions, runAs: RunAs) => PostgresInstance;

/** As PostgresInstance.start does: as root, the server runs as the `postgres` system user. */
function runAs(dir: string): RunAs {
  if (process.getuid?.() !== 0) return undefined;
  const f = readFileSync('/etc/passwd', 'utf8').split('\n').map((l) => l.split(':')).find((x) => x[0] === 'postgres');
  assert.ok(f, 'no postgres system user');
  const user = { uid: Number(f[2]), gid: Number(f[3]) };
  chownSync(dir, user.uid, user.gid);
  return user;
}

test('startServer on a port another PostgreSQL server holds fails with the bind error; it does not take the other server for its own', async () => {
  const first = await PostgresInstance.start();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-pg-'));
  const second = new construct(dir, first.port, {}, runAs(dir));
  try {
    await (second as unknown as Internals).initdb();
    await assert.rejects(second.startServer(), /postgres exited during startup: .*(could not bind|could not create any TCP\/IP sockets)/s);
    assert.equal(second.running, false);
    // The first server was left alone.
    assert.deepEqual(await first.sql('postgres', 'SELECT 1 AS one'), [{ one: 1 }]);
  } finally {
    await second.destroy();
    await first.destroy();
  }
});
