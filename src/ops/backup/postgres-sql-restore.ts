import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pickFreePort } from '../free-port.js';
import { DEFAULT_POSTGRES_BIN } from '../postgres/postgres-instance.js';
import { PostgresServer } from '../postgres/postgres-server.js';
import type { UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import type { PgAccess } from './postgres-access.js';
import { restoreInto, scratchOnly } from './postgres-recovery.js';
import { toolInput, toolOutput } from './process-streams.js';

const bin = (name: string) => join(process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN, name);
const ident = (n: string) => `"${n.replace(/"/g, '""')}"`;

/**
 * A restore in place on a fleet given by `--config`: its servers' datadirs are on other machines,
 * so the base backup is recovered (to its LSN, or with the archived WAL to `pitr.toMs`) in a
 * scratch server here, then `pg_dump` of it is loaded into the pair's master in ONE transaction
 * that first drops the master's schemas and ends with `tail` (SQL run last in it): the master
 * has exactly the restored data or, if anything fails (the dump, the load, the connection),
 * still its own. The standby replays the load as any other write, so the pair stays one. (MariaDB's restore loads into the master the same way.)
 */
export async function restoreThroughSql(access: PgAccess, master: string, unit: UnitBackup, target: BackupTarget, prefix: string, pitr: { archive: string; toMs: number } | undefined, tail: string): Promise<void> {
  const scratch = mkdtempSync(join(tmpdir(), 'shardkit-restore-'));
  // The server runs as the postgres user when we are root: it must reach its directory.
  chmodSync(scratch, 0o755);
  const server = new PostgresServer({ name: 'restore', dir: join(scratch, 'pg'), port: await pickFreePort() });
  try {
    await restoreInto(server, unit, target, prefix, pitr);
    scratchOnly(server.dataDir);
    await server.start();
    await server.waitPromoted();
    const schemas = await access.server(master).sql<{ n: string }>("SELECT nspname AS n FROM pg_namespace WHERE nspname NOT LIKE 'pg\\_%' AND nspname <> 'information_schema' ORDER BY 1", [], access.database);
    const dump = toolOutput(bin('pg_dump'), ['-h', server.host, '-p', String(server.port), '-U', 'postgres', '--no-password', '-d', access.database]);
    await toolInput(bin('psql'), [...access.clientArgs(master), '--no-password', '-d', access.database, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], Readable.from(script(schemas.map((s) => s.n), dump, tail)), { env: access.toolEnv() });
  } finally {
    await server.stop().catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/**
 * BEGIN, the master's schemas dropped, the dump, `tail` (the live sequences kept where higher:
 * restore-counters.ts), and COMMIT only once the dump ended well: a dump cut short closes psql's
 * input without COMMIT and the server rolls the whole load back.
 */
async function* script(schemas: string[], dump: Readable, tail: string): AsyncGenerator<Buffer> {
  const drops = schemas.map((s) => (s === 'public' ? 'DROP SCHEMA public CASCADE;\nCREATE SCHEMA public AUTHORIZATION pg_database_owner;' : `DROP SCHEMA ${ident(s)} CASCADE;`));
  yield Buffer.from(`BEGIN;\n${drops.join('\n')}\n`);
  for await (const chunk of dump) yield chunk as Buffer;
  yield Buffer.from(`${tail}\nCOMMIT;\n`);
}
