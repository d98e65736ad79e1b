import { z } from 'zod';
import type { RecordKind, RecordSet } from './record-set.js';

/**
 * What a running service (a ShardKit that routes with the map) says about itself, every few
 * seconds, beside the map (#28): the map version it routes by, and which hosts that map names
 * that it cannot reach because its config does not declare them. A move reads these before it
 * freezes, so no range is switched to a host a live service does not know yet.
 */
export interface ServiceHeartbeat {
  /** When this record was written (ms since the epoch, the service's clock). */
  at: number;
  /** The record is the service's word until at + ttlMs; after that the service counts as gone. */
  ttlMs: number;
  /** The version of the map the service routes by. */
  mapVersion: number;
  /** Hosts named by that map (ranges and move targets) that the service has no address for. */
  missing: string[];
  /** Where it runs, for the operator reading a refusal. */
  hostname: string;
  pid: number;
  /**
   * The third witness (#31): for each master a heal supervisor suspects (heal-records.ts), whether
   * this service reached it with a trivial query when it wrote this record.
   */
  reach?: ServiceReach[];
}

/** One suspected master as a service saw it. */
export interface ServiceReach {
  host: string;
  ok: boolean;
  /** When the probe ended (the service's clock: for people; no decision compares it). */
  at: number;
  /**
   * The `since` of every live supervisor suspicion of this host the service had read before it
   * probed (heal-records.ts). A supervisor counts the word only if it holds its own `since`: the
   * probe then came after its suspicion by causality, whatever the two machines' clocks say.
   */
  answering?: number[];
  error?: string;
}

/** Supervisors whose suspicion of one host a service answers at most (a few run at once). */
export const MAX_ANSWERING = 16;

export type ServiceRecords = RecordSet<ServiceHeartbeat>;

/** Service ids: hostname, pid and a random tag; used as file names and etcd keys. */
export const SERVICE_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

const heartbeatSchema = z.object({
  at: z.number().int().nonnegative(),
  ttlMs: z.number().int().positive().max(86_400_000),
  mapVersion: z.number().int().nonnegative(),
  missing: z.array(z.string().min(1).max(256)).max(100_000),
  hostname: z.string().max(256),
  pid: z.number().int().nonnegative(),
  reach: z.array(z.object({ host: z.string().min(1).max(256), ok: z.boolean(), at: z.number().int().nonnegative(), answering: z.array(z.number().int().nonnegative()).max(MAX_ANSWERING).optional(), error: z.string().max(500).optional() })).max(1000).optional(),
}).strict();

export const serviceHeartbeatKind: RecordKind<ServiceHeartbeat> = {
  what: 'service heartbeat record',
  namePattern: SERVICE_ID_PATTERN,
  schema: heartbeatSchema,
};

/** The records whose service is still alive at `now` (its last word has not run out). */
export function liveServices(records: ReadonlyMap<string, ServiceHeartbeat>, now: number): Map<string, ServiceHeartbeat> {
  return new Map([...records].filter(([, r]) => now <= r.at + r.ttlMs));
}

/**
 * Live services that could not route to `hosts` yet: those routing by a map older than
 * `mapVersion` (they may not know the move), or missing one of the hosts. Empty: every live
 * service can reach them.
 */
export function servicesNotKnowing(records: ReadonlyMap<string, ServiceHeartbeat>, hosts: readonly string[], mapVersion: number, now: number): Array<{ id: string; record: ServiceHeartbeat; missing: string[] }> {
  const out: Array<{ id: string; record: ServiceHeartbeat; missing: string[] }> = [];
  for (const [id, record] of liveServices(records, now)) {
    const missing = record.mapVersion < mapVersion ? [...hosts] : hosts.filter((h) => record.missing.includes(h));
    if (missing.length > 0) out.push({ id, record, missing });
  }
  return out;
}
