import { ShardKitError } from '../../errors.js';

/** The engines a table migration reads from. */
export type SourceEngine = 'mysql' | 'postgres';

export interface SourceUrl {
  engine: SourceEngine;
  /** The URL as the driver takes it (mariadb:// becomes mysql://; postgresql:// is kept). */
  url: string;
  /** The URL without its password, for reports, logs and the migration state. */
  display: string;
}

const ENGINES: Record<string, SourceEngine> = {
  'mysql:': 'mysql',
  'mariadb:': 'mysql',
  'postgres:': 'postgres',
  'postgresql:': 'postgres',
};

/** Is `from` meant as a database URL (and not a config file path)? */
export function looksLikeSourceUrl(from: string): boolean {
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(from);
}

/**
 * Parses `--from` for a table migration: mysql://, mariadb://, postgres:// or postgresql://
 * with a host and a database. INVALID_ARGUMENT for anything else, before anything is opened.
 */
export function parseSourceUrl(from: string): SourceUrl {
  let u: URL;
  try {
    u = new URL(from);
  } catch {
    throw new ShardKitError('INVALID_ARGUMENT', `--from ${JSON.stringify(redact(from))} is not a URL (expected mysql://user:password@host:port/database, mariadb://... or postgres://...)`);
  }
  const engine = ENGINES[u.protocol.toLowerCase()];
  if (engine === undefined) {
    throw new ShardKitError('INVALID_ARGUMENT', `--from: unsupported scheme ${JSON.stringify(u.protocol)} (expected mysql://, mariadb:// or postgres://)`);
  }
  if (u.hostname === '') throw new ShardKitError('INVALID_ARGUMENT', '--from: the URL names no host');
  const database = decodeURIComponent(u.pathname.replace(/^\//, ''));
  if (database === '' || database.includes('/')) throw new ShardKitError('INVALID_ARGUMENT', '--from: the URL must name one database (…/database)');
  const url = engine === 'mysql' && u.protocol.toLowerCase() === 'mariadb:' ? `mysql:${from.slice(from.indexOf(':') + 1)}` : from;
  return { engine, url, display: redact(from) };
}

/** The URL with its password replaced by `***` (also for strings that do not parse). */
export function redact(from: string): string {
  return from.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:@/]*:)[^@/]*@/i, '$1***@');
}
