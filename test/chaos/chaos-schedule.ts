import { mulberry32 } from '../../src/util/prng.js';

/**
 * A seeded schedule of faults for a chaos run: the same seed gives the same faults, pairs and
 * durations, so a failing run is replayed with `npm run chaos -- --seed N`.
 */

export type FaultKind =
  | 'kill-master' // kill -9 of a pair's master: the supervisor fails it over
  | 'stop-master' // SIGSTOP of a master for a while, then SIGCONT (the zombie master)
  | 'kill-slave' // kill -9 of a slave, restarted by `dev up`
  | 'kill-service' // kill -9 of a `shardkit serve`, started again
  | 'kill-supervisor' // kill -9 of `shardkit heal`, started again
  | 'partition-service' // the services cannot reach a master (proxy black hole); nobody fails over
  | 'partition-supervisor' // the supervisor cannot reach a master the services and its slave reach; nobody fails over
  | 'jitter' // every connection of the services and the supervisor delayed 0-200 ms, 5% of chunks lost (late); nobody fails over
  | 'planned-failover' // `shardkit failover <master>` in the middle of it all
  | 'move' // `shards move` of one shard to the other pair, then drop-moved
  | 'kill-mover'; // the same move, its mover killed (-9) somewhere in it, then `--resume` finishes or rolls it back

export interface Fault {
  kind: FaultKind;
  /** The pair (1-based) it hits, where it hits one. */
  pair: number;
  /** How long a stop, partition or jitter lasts (ms). */
  ms: number;
  /** The service it hits (kill-service). */
  service: number;
}

export const ALL_FAULTS: readonly FaultKind[] = ['kill-master', 'stop-master', 'kill-slave', 'kill-service', 'kill-supervisor', 'partition-service', 'partition-supervisor', 'jitter', 'planned-failover', 'move', 'kill-mover'];

/**
 * `kinds` in a seeded order (each once: the CI schedule), or `count` faults drawn at random (the
 * long schedule). A stop lasts 2-20 s (past ~12 s the slave gives up on its master and the
 * supervisor fails it over); partitions and jitter 2-8 s.
 */
export function schedule(seed: number, options: { kinds?: readonly FaultKind[]; count?: number; from?: readonly FaultKind[]; pairs: number; services: number }): Fault[] {
  const rnd = mulberry32(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const kinds = options.kinds !== undefined
    ? [...options.kinds].map((k) => ({ k, r: rnd() })).sort((a, b) => a.r - b.r).map((x) => x.k)
    : Array.from({ length: options.count ?? 10 }, () => pick([...(options.from ?? ALL_FAULTS)]));
  return kinds.map((kind) => ({
    kind,
    pair: 1 + Math.floor(rnd() * options.pairs),
    ms: kind === 'stop-master' ? 2000 + Math.floor(rnd() * 18_000) : 2000 + Math.floor(rnd() * 6000),
    service: Math.floor(rnd() * options.services),
  }));
}

/**
 * The kinds a fleet of this engine takes: every kind on both (the supervisor reaches MariaDB and
 * PostgreSQL dev servers by their unix sockets, which the harness can cut alone).
 */
export function faultKinds(_engine: 'mariadb' | 'postgres'): FaultKind[] {
  return [...ALL_FAULTS];
}
