import { ShardKitError } from '../errors.js';
import { describeError } from './server-selector.js';
import { TicketServer } from './ticket-server.js';
import { resolveTickets, type ResolvedTickets, type TicketsConfig, type TicketsConfigInput } from './tickets-config.js';

/**
 * The storage engine of ticket tables. MyISAM, as in the seed, measured against InnoDB on
 * MariaDB 10.11 (docs/tickets.md): every statement holds the table lock, so REPLACE and the
 * segment UPDATE are atomic against each other and concurrent REPLACEs never deadlock (InnoDB's
 * did with 8 connections); no fsync per ID (≈4x the IDs/s); a kill -9 is repaired from the data
 * file on the next open (myisam_recover_options), which keeps the newest row and so the counter.
 */
export const TICKET_TABLE_ENGINE = 'MyISAM';

/** The seed's Tickets64 table; one per sequence. */
export function ticketTableDdl(table: string): string {
  return `CREATE TABLE IF NOT EXISTS \`${table}\` (
  id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  stub CHAR(1) NOT NULL DEFAULT '',
  PRIMARY KEY (id),
  UNIQUE KEY stub (stub)
) ENGINE=${TICKET_TABLE_ENGINE}`;
}

export interface TicketInitServerResult {
  server: string;
  ok: boolean;
  /** Tables this run created (empty when everything existed: init is idempotent). */
  created: string[];
  existing: string[];
  warnings: string[];
  error?: string;
}

export interface TicketInitOptions {
  /** Called after each server, for progress output. */
  onServer?: (result: TicketInitServerResult, done: number, total: number) => void;
}

/**
 * `shardkit tickets init`: on every ticket server, checks that auto_increment_increment and
 * auto_increment_offset match the config (a mismatch would issue duplicates), creates the
 * database, one table per sequence and its single stub row. Safe to run again. A server that
 * fails is reported and the others are still initialised.
 */
export async function initTicketServers(input: TicketsConfigInput | TicketsConfig | ResolvedTickets, options: TicketInitOptions = {}): Promise<TicketInitServerResult[]> {
  const config = resolveTickets(input);
  const results: TicketInitServerResult[] = [];
  let done = 0;
  for (const spec of config.servers) {
    const server = new TicketServer(spec, {
      increment: config.increment,
      poolSize: 1,
      connectTimeoutMs: Math.max(config.connectTimeoutMs, 5000),
      queryTimeoutMs: Math.max(config.queryTimeoutMs, 30_000),
    });
    const result: TicketInitServerResult = { server: spec.name, ok: false, created: [], existing: [], warnings: [] };
    try {
      await initOne(server, config, result);
      result.ok = true;
    } catch (err) {
      result.error = describeError(err);
    } finally {
      await server.close();
    }
    results.push(result);
    options.onServer?.(result, ++done, config.servers.length);
  }
  return results;
}

async function initOne(server: TicketServer, config: ResolvedTickets, result: TicketInitServerResult): Promise<void> {
  const v = await server.variables();
  if (v.increment !== config.increment || v.offset !== server.offset) {
    throw new ShardKitError('INVALID_CONFIG', `${server.name} runs with auto_increment_increment=${v.increment}, auto_increment_offset=${v.offset}; the config needs ${config.increment} and ${server.offset} (set them in its [mysqld] section and restart it)`);
  }
  if (!/BACKUP|FORCE|QUICK|DEFAULT/i.test(v.recoverOptions)) {
    result.warnings.push(`${server.name}: myisam_recover_options=${v.recoverOptions}; after a crash the ticket tables stay marked crashed until repaired (set myisam_recover_options=BACKUP,QUICK)`);
  }
  const db = config.database;
  await server.query(`CREATE DATABASE IF NOT EXISTS \`${db}\``);
  const rows = (await server.query('SELECT TABLE_NAME AS name, ENGINE AS engine FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?', [db])) as Array<{ name: string; engine: string }>;
  const existing = new Map(rows.map((r) => [r.name, r.engine]));
  for (const seq of config.sequences) {
    const engine = existing.get(seq.table);
    if (engine === undefined) {
      await server.query(`USE \`${db}\`; ${ticketTableDdl(seq.table)}; INSERT IGNORE INTO \`${seq.table}\` (stub) VALUES ('a');`);
      result.created.push(seq.table);
    } else {
      if (engine !== TICKET_TABLE_ENGINE) result.warnings.push(`${server.name}: ${db}.${seq.table} is ${engine}, not ${TICKET_TABLE_ENGINE}; see docs/tickets.md`);
      // The stub row holds the newest ID; recreate it if someone deleted it (costs one fresh ID).
      await server.query(`INSERT IGNORE INTO \`${db}\`.\`${seq.table}\` (stub) VALUES ('a')`);
      result.existing.push(seq.table);
    }
  }
}
