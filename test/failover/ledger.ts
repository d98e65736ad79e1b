import { setTimeout as sleep } from 'node:timers/promises';
import { isShardKitError } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import type { DevCluster } from '../../src/ops/dev-cluster.js';

/** What a writer saw: every acknowledged pin (id, time) and the errors by code. */
export interface Ledger {
  /** Each acknowledged pin, when it was acknowledged and when its write was sent. */
  acked: Array<{ id: bigint; at: number; sentAt?: number }>;
  errors: Map<string, number>;
  /** Longest run of failed writes, per writer, in ms (a client-seen pause). */
  pauses: number[];
  /**
   * Per writer, the longest time between two acknowledgments (ms): the pause a client sees whether
   * its writes were refused and retried or held by the service (a failover's range freeze).
   */
  gaps: number[];
}

export function newLedger(): Ledger {
  return { acked: [], errors: new Map(), pauses: [], gaps: [] };
}

/** Resolves once the ledger holds an acknowledged write made after `since` (no fixed sleep: the machine may be slow). */
export async function ackedAfter(ledger: Ledger, since: number, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!ledger.acked.some((a) => a.at > since)) {
    if (Date.now() > deadline) throw new Error(`no write was acknowledged within ${timeoutMs} ms after the failover`);
    await sleep(50);
  }
}

/**
 * `writers` loops per kit, each creating pins on `shards` until `until` resolves; a failed write
 * is counted and retried after a short sleep (what a service's client does).
 */
export async function writeLoad(kits: ShardKit[], shards: number[], until: Promise<void>, writers = 2, ledger: Ledger = newLedger()): Promise<Ledger> {
  let stop = false;
  void until.then(() => (stop = true));
  let n = 0;
  await Promise.all(kits.flatMap((kit) => Array.from({ length: writers }, async () => {
    let failingSince: number | undefined;
    let lastAck: number | undefined;
    let gap = 0;
    while (!stop) {
      const shard = shards[n++ % shards.length]!;
      try {
        const sentAt = Date.now();
        const o = await kit.objects.create('pin', { n, at: sentAt }, { shard });
        const at = Date.now();
        ledger.acked.push({ id: o.id, at, sentAt });
        if (lastAck !== undefined) gap = Math.max(gap, at - lastAck);
        lastAck = at;
        if (failingSince !== undefined) ledger.pauses.push(Date.now() - failingSince);
        failingSince = undefined;
        // An embedded backend answers without I/O: yield, so timers (the test's own waits) still run.
        await new Promise((r) => setImmediate(r));
      } catch (err) {
        const code = isShardKitError(err) ? err.code : (err as Error).message;
        ledger.errors.set(code, (ledger.errors.get(code) ?? 0) + 1);
        failingSince ??= Date.now();
        await sleep(20);
      }
    }
    ledger.gaps.push(gap);
  })));
  return ledger;
}

/** The acknowledged pins that `host` does not hold. */
export async function missingOn(cluster: DevCluster, host: string, acked: Array<{ id: bigint }>): Promise<bigint[]> {
  const byShard = new Map<number, bigint[]>();
  for (const { id } of acked) {
    const { shard } = pinterestId.decode(id);
    byShard.set(shard, [...(byShard.get(shard) ?? []), id]);
  }
  const missing: bigint[] = [];
  for (const [shard, ids] of byShard) {
    const db = `db${String(shard).padStart(5, '0')}`;
    const rows = await cluster.instance(host).admin<Array<{ id: string }>>(`SELECT local_id AS id FROM ${db}.pins`);
    const have = new Set(rows.map((r) => String(r.id)));
    for (const id of ids) if (!have.has(String(pinterestId.decode(id).localId))) missing.push(id);
  }
  return missing;
}

export function percentile(values: number[], p: number): number {
  if (values.length === 0) return 0;
  const s = [...values].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}
