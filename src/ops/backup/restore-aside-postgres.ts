import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { SEQUENCES_SQL, type SequenceRow } from '../../moves/postgres/index.js';
import { shardDatabaseName } from '../../storage/shard-names.js';
import { pickFreePort } from '../free-port.js';
import { DEFAULT_POSTGRES_BIN } from '../postgres/postgres-instance.js';
import { PostgresServer } from '../postgres/postgres-server.js';
import { archiveDir } from './archive-dir.js';
import type { TableSummary, UnitBackup } from './backup-manifest.js';
import type { BackupTarget } from './backup-target.js';
import type { PgAccess } from './postgres-access.js';
import { restoreInto, scratchOnly } from './postgres-recovery.js';
import { postgresTableSummaries } from './postgres-tables.js';
import { toolInput, toolOutput } from './process-streams.js';
import { raiseSequencesSql } from './restore-counters.js';
import { requested, type AsideRequest } from './restore-aside.js';

const bin = (name: string) => join(process.env.SHARDKIT_POSTGRES_BIN ?? DEFAULT_POSTGRES_BIN, name);
const ident = (n: string) => `"${n.replace(/"/g, '""')}"`;

/**
 * Restores shards of one PostgreSQL pair's backup aside: the base backup recovered (to its LSN, or
 * with the archived WAL to the time asked) in a scratch server on this machine, as `backup verify`
 * and a fleet's restore do; then, in ONE transaction on the spare pair's master, `preamble` (the
 * move's marker and the shards' tables as `shardkit init` makes them) and the rows of the shards'
 * object tables (`pg_dump --data-only`). The spare's standby replays it like any write. Returns
 * what the scratch server held of them: what the spare must hold.
 */
export async function postgresRestoreAside(access: PgAccess, unit: UnitBackup, target: BackupTarget, prefix: string, req: AsideRequest, preamble: string): Promise<Record<string, TableSummary>> {
  const scratch = mkdtempSync(join(tmpdir(), 'shardkit-aside-'));
  // The server runs as the postgres user when we are root: it must reach its directory.
  chmodSync(scratch, 0o755);
  const server = new PostgresServer({ name: 'aside', dir: join(scratch, 'pg'), port: await pickFreePort() });
  try {
    await restoreInto(server, unit, target, prefix, req.toMs === undefined ? undefined : { archive: archiveDir(target, unit.unit), toMs: req.toMs });
    scratchOnly(server.dataDir);
    await server.start();
    await server.waitPromoted();
    const schemas = req.shards.map((s) => shardDatabaseName(s));
    const expected = requested(req, await postgresTableSummaries(server, access.database, { schemas }), shardDatabaseName);
    const total = Object.values(expected).reduce((n, t) => n + t.rows, 0);
    const tables = Object.keys(expected).flatMap((n) => {
      const [s, t] = n.split('.') as [string, string];
      return ['-t', `${ident(s)}.${ident(t)}`];
    });
    // In place: the rows go, the tables and their sequences stay (TRUNCATE keeps them), and each
    // sequence is set back to at least its value before, whatever the dump's setval says.
    const names = Object.keys(expected).map((n) => n.split('.').map(ident).join('.'));
    const before = req.replace === true ? await access.server(req.into.master).sql<SequenceRow>(SEQUENCES_SQL, [schemas], access.database) : [];
    const head = req.replace === true && names.length > 0 ? `${preamble};\nTRUNCATE ${names.join(', ')}` : preamble;
    const tail = raiseSequencesSql(before);
    const body = tables.length === 0 ? Readable.from([]) : toolOutput(bin('pg_dump'), ['-h', server.host, '-p', String(server.port), '-U', 'postgres', '--no-password', '-d', access.database, '--data-only', ...tables]);
    await toolInput(bin('psql'), [...access.clientArgs(req.into.master), '--no-password', '-d', access.database, '-X', '-q', '-v', 'ON_ERROR_STOP=1'], Readable.from(inOneTransaction(head, body, tail)), { env: access.toolEnv() });
    req.onRows?.(total, total);
    return expected;
  } finally {
    await server.stop().catch(() => undefined);
    rmSync(scratch, { recursive: true, force: true });
  }
}

/** COMMIT only once the dump ended well: a dump cut short closes psql's input without it, and the server rolls the whole load back. */
async function* inOneTransaction(preamble: string, body: Readable, tail: string): AsyncGenerator<Buffer> {
  yield Buffer.from(`BEGIN;\n${preamble};\n`);
  for await (const chunk of body) yield chunk as Buffer;
  yield Buffer.from(`${tail}\nCOMMIT;\n`);
}
