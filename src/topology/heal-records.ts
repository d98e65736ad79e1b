import { z } from 'zod';
import type { RecordKind, RecordSet } from './record-set.js';

/** A master a supervisor cannot reach, since when (its clock). */
export interface HealSuspect {
  host: string;
  since: number;
}

/** One pair as a supervisor judged it last. */
export interface HealPairState {
  master: string;
  slave: string;
  verdict: 'healthy' | 'degraded' | 'suspect' | 'failover' | 'recommend' | 'refuse' | 'rebuild';
  reason?: string;
  /** When this verdict was first reached (ms since the epoch). */
  since: number;
}

/**
 * A `shardkit heal` supervisor's word beside the map (#31), rewritten every round: whether it
 * acts, every pair's state (the dashboard shows them), and the masters it cannot reach. Services
 * read the suspects and say in their heartbeat whether they still reach them (the third witness).
 */
export interface HealStatus {
  at: number;
  ttlMs: number;
  mode: 'observe' | 'act';
  acting: boolean;
  hostname: string;
  pid: number;
  suspects: HealSuspect[];
  pairs: HealPairState[];
}

export type HealRecords = RecordSet<HealStatus>;

const host = z.string().min(1).max(256);
const epochMs = z.number().int().nonnegative();

export const healStatusKind: RecordKind<HealStatus> = {
  what: 'heal supervisor record',
  namePattern: /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/,
  schema: z.object({
    at: epochMs,
    ttlMs: z.number().int().positive().max(86_400_000),
    mode: z.enum(['observe', 'act']),
    acting: z.boolean(),
    hostname: z.string().max(256),
    pid: z.number().int().nonnegative(),
    suspects: z.array(z.object({ host, since: epochMs }).strict()).max(10_000),
    pairs: z.array(z.object({
      master: host, slave: host,
      verdict: z.enum(['healthy', 'degraded', 'suspect', 'failover', 'recommend', 'refuse', 'rebuild']),
      reason: z.string().max(2000).optional(),
      since: epochMs,
    }).strict()).max(10_000),
  }).strict() as unknown as RecordKind<HealStatus>['schema'],
};

/** How far a service's clock may run ahead of a supervisor's and the service still answer its suspicions. */
export const SUSPECT_CLOCK_SLACK_MS = 300_000;

/** Every live supervisor's suspects, merged: per host, each supervisor's `since` (its own clock), newest first, at most `max`. */
export function liveSuspects(records: ReadonlyMap<string, HealStatus>, now: number, max = 16): Map<string, number[]> {
  const out = new Map<string, number[]>();
  for (const r of records.values()) {
    // With slack for the two clocks: a service whose clock runs ahead still answers (the
    // supervisor matches its own since exactly, so an old suspicion answered costs a probe only).
    if (now > r.at + r.ttlMs + SUSPECT_CLOCK_SLACK_MS) continue;
    for (const s of r.suspects) {
      const sinces = out.get(s.host) ?? [];
      if (!sinces.includes(s.since)) sinces.push(s.since);
      out.set(s.host, sinces);
    }
  }
  for (const [host, sinces] of out) out.set(host, sinces.sort((a, b) => b - a).slice(0, max));
  return out;
}
