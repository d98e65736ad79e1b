import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import type { ShardMap } from '../../src/topology/shard-map.js';
import { newLedger, writeLoad, type Ledger } from '../failover/ledger.js';

/** Two writers per service on `shards`, each keeping the ledger of acknowledged writes, until stop(). */
export function startLoad(kits: ShardKit[], shards: number[]): { ledger: Ledger; stop(): Promise<Ledger> } {
  let release!: () => void;
  const ledger = newLedger();
  const running = writeLoad(kits, shards, new Promise<void>((r) => (release = r)), 2, ledger);
  return { ledger, stop: async () => { release(); return running; } };
}

/** Resolves once every one of `shards` has a write acknowledged after `since` (no fixed sleep: the bound is only a hang guard). */
export async function ackedOn(ledger: Ledger, shards: number[], since: number): Promise<void> {
  const deadline = Date.now() + 120_000;
  while (shards.some((s) => !ledger.acked.some((a) => a.at > since && pinterestId.decode(a.id).shard === s))) {
    if (Date.now() > deadline) throw new Error(`no write acknowledged on shards ${shards.join(',')} within 120 s (errors ${JSON.stringify([...ledger.errors])})`);
    await sleep(50);
  }
}

/** Acknowledged writes that are not on the master `map` names for their shard (`ids`: local ids of a shard's pins on a host). */
export async function lostWrites(ledger: Ledger, map: ShardMap, ids: (host: string, shard: number) => Promise<string[]>): Promise<string[]> {
  const out: string[] = [];
  const have = new Map<number, Set<string>>();
  for (const a of ledger.acked) {
    const { shard, localId } = pinterestId.decode(a.id);
    if (!have.has(shard)) have.set(shard, new Set(await ids(map.locate(shard).master, shard)));
    if (!have.get(shard)!.has(String(localId))) out.push(`${a.id} (shard ${shard})`);
  }
  return out;
}

/** After a failed move: its record is left 'aborting' (it can never switch), the range on the source. Returns the move id. */
export function leftAborting(map: ShardMap, span: [number, number], source: string): string {
  const rec = map.moves().find((x) => x.range[0] === span[0] && x.range[1] === span[1]);
  assert.equal(rec?.phase, 'aborting', 'the record waits for --abort to be run again');
  for (let s = span[0]; s <= span[1]; s++) assert.equal(map.locate(s).master, source);
  return rec!.id;
}
