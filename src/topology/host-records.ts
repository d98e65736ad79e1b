import { z } from 'zod';
import type { RecordKind, RecordSet } from './record-set.js';

/**
 * How a database host is reached, kept beside the map (#28: hosts are topology). A service that
 * sees a host here that its config does not declare connects to it with its config's storage
 * credentials (or those of the config host named by `credentialsFrom`), so a pair added to a
 * running fleet reaches services on other machines whose config files nobody edits. Never a
 * secret: the schema has no user or password, and refuses any field it does not know.
 */
export interface HostRecord {
  /** Address the service connects to (a name or an IP). */
  address: string;
  port: number;
  role: 'master' | 'slave';
  engine: 'mariadb' | 'postgres';
  /** A host of the service's own config whose user and password to use (default: the storage section's). */
  credentialsFrom?: string;
}

export type HostRecords = RecordSet<HostRecord>;

/** Host names as the map and config name them; used as file names and etcd keys. */
export const HOST_NAME_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const hostRecordKind: RecordKind<HostRecord> = {
  what: 'host record',
  namePattern: HOST_NAME_PATTERN,
  schema: z.object({
    address: z.string().regex(/^[A-Za-z0-9.:_-]{1,253}$/, 'must be a host name or an IP address'),
    port: z.number().int().min(1).max(65535),
    role: z.enum(['master', 'slave']),
    engine: z.enum(['mariadb', 'postgres']),
    credentialsFrom: z.string().regex(HOST_NAME_PATTERN).optional(),
  }).strict() as unknown as RecordKind<HostRecord>['schema'],
};

/**
 * The config `hosts` entries for `records` that `configHosts` lacks: address and port, with the
 * user and password of the config host a record names in `credentialsFrom` (none: the storage
 * section's defaults apply). A record naming a config host that does not exist is left out, so
 * it stays HOST_UNKNOWN (a retryable 503) rather than connecting with the wrong account.
 */
export function hostsFromRecords(records: ReadonlyMap<string, HostRecord>, configHosts: Readonly<Record<string, { user?: string; password?: string }>>): Record<string, { host: string; port: number; user?: string; password?: string }> {
  const out: Record<string, { host: string; port: number; user?: string; password?: string }> = {};
  for (const [name, r] of records) {
    if (Object.hasOwn(configHosts, name)) continue;
    let credentials: { user?: string; password?: string } = {};
    if (r.credentialsFrom !== undefined) {
      if (!Object.hasOwn(configHosts, r.credentialsFrom)) continue;
      const from = configHosts[r.credentialsFrom]!;
      credentials = { ...(from.user !== undefined ? { user: from.user } : {}), ...(from.password !== undefined ? { password: from.password } : {}) };
    }
    out[name] = { host: r.address, port: r.port, ...credentials };
  }
  return out;
}
