import type { Etcd3, IKeyValue } from 'etcd3';

export type { EtcdSnapshot } from './etcd-snapshot.js';
import { randomBytes } from 'node:crypto';
import { ShardKitError } from '../../errors.js';
import { ShardMap, type ShardRange } from '../shard-map.js';
import { mapFromRecords, pairRangesInMap, patchedMap } from '../record-patch.js';
import type { EtcdSnapshot } from './etcd-snapshot.js';
import { decodeRecord, encodeRecords, isRecordRoot, makeRoot, parseRoot, type DecodedRecord, type MapRoot } from '../map-records.js';

/** Most operations one compare-and-set transaction carries (etcd's --max-txn-ops default is 128). */
export const MAX_TXN_RECORDS = 100;

/**
 * The etcd keys of the shard map. The root stays at the map's key (where today's single
 * document is), records live under `<key>/m/<gen>/<record>`; `<key>/progress/` sorts after the
 * watched span, so one range watch [key, key + '/n') carries the root and records and nothing else.
 */
export class EtcdMapKeys {
  constructor(readonly key: string) {}

  get watchEnd(): string {
    return `${this.key}/n`;
  }

  genPrefix(gen: string): string {
    return `${this.key}/m/${gen}/`;
  }

  /** The record name of a key under generation `gen`, or undefined. */
  recordName(key: string, gen: string): string | undefined {
    const p = this.genPrefix(gen);
    return key.startsWith(p) ? key.slice(p.length) : undefined;
  }
}

/** Builds the snapshot from the kvs of one range read [key, key/n). */
export function snapshotOf(keys: EtcdMapKeys, kvs: IKeyValue[], revision: number, parseOld: (kv: IKeyValue) => ShardMap): EtcdSnapshot {
  const rootKv = kvs.find((kv) => kv.key.toString('utf8') === keys.key);
  if (rootKv === undefined) return { layout: 0, revision, modRevision: '0' };
  const text = rootKv.value.toString('utf8');
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return { layout: 1, revision, modRevision: rootKv.mod_revision, map: parseOld(rootKv), text };
  }
  if (!isRecordRoot(json)) return { layout: 1, revision, modRevision: rootKv.mod_revision, map: parseOld(rootKv), text };
  const root = parseRoot(json, `etcd key ${keys.key}`);
  const records = new Map<string, { text: string; decoded: DecodedRecord }>();
  for (const kv of kvs) {
    const name = keys.recordName(kv.key.toString('utf8'), root.gen);
    if (name === undefined) continue;
    const t = kv.value.toString('utf8');
    records.set(name, { text: t, decoded: decodeRecord(name, t, `etcd key ${kv.key.toString('utf8')}`) });
  }
  return { layout: 2, revision, modRevision: rootKv.mod_revision, map: mapOf(keys, root, records), text, root, records };
}

/** The map of a root and its records; an overlap or gap names the records involved. */
export function mapOf(keys: EtcdMapKeys, root: MapRoot, records: ReadonlyMap<string, { decoded: DecodedRecord }>): ShardMap {
  return mapFromRecords(root, records, `etcd keys ${keys.genPrefix(root.gen)}*`, (n) => keys.genPrefix(root.gen) + n);
}

/**
 * Writes `stored` (already at its new version) in the record layout, guarded by the root's
 * mod_revision. A change of at most MAX_TXN_RECORDS records is one transaction over those records
 * and the root. A larger one (first write, upgrade, a big edit) writes a whole new generation of
 * records nobody reads yet, then flips the root with one guarded put: a writer that dies before
 * the flip leaves only unreferenced keys, so readers see the old map or the new one.
 * Returns whether the compare-and-set won.
 */
export async function writeRecords(client: Etcd3, keys: EtcdMapKeys, current: EtcdSnapshot, stored: ShardMap, deadline: { deadline: number }): Promise<{ won: boolean; rootText: string }> {
  const json = stored.toJSON();
  const next = encodeRecords(json);
  if (current.layout === 2) {
    const ops: Array<['put', string, string] | ['delete', string]> = [];
    for (const [name, text] of next) if (current.records.get(name)?.text !== text) ops.push(['put', name, text]);
    for (const name of current.records.keys()) if (!next.has(name)) ops.push(['delete', name]);
    if (ops.length <= MAX_TXN_RECORDS) {
      const rootText = JSON.stringify(makeRoot(json, stored.version, current.root.gen, next.size));
      const prefix = keys.genPrefix(current.root.gen);
      const txn = await client.if(keys.key, 'Mod', '==', current.modRevision).options(deadline).then(
        ...ops.map((op) => (op[0] === 'put' ? client.put(prefix + op[1]).value(op[2]) : client.delete().key(prefix + op[1]))),
        client.put(keys.key).value(rootText),
      ).commit();
      return { won: txn.succeeded, rootText };
    }
  }
  const gen = randomBytes(6).toString('hex');
  const prefix = keys.genPrefix(gen);
  const rootText = JSON.stringify(makeRoot(json, stored.version, gen, next.size));
  const entries = [...next];
  for (let i = 0; i < entries.length; i += MAX_TXN_RECORDS) {
    const batch = entries.slice(i, i + MAX_TXN_RECORDS);
    await client.if(keys.key, 'Mod', '==', current.modRevision).options(deadline).then(...batch.map(([name, text]) => client.put(prefix + name).value(text))).commit();
  }
  const txn = await client.if(keys.key, 'Mod', '==', current.modRevision).options(deadline).then(client.put(keys.key).value(rootText)).commit();
  // Lost: our generation is referenced by nobody. Won: every other generation is garbage (the one
  // replaced, and any a writer killed before its flip left behind). Generation names have one
  // length, so [<key>/m/, <key>/m/<gen>/) and [<key>/m/<gen>0, <key>/m0) are all the others.
  if (!txn.succeeded) await client.delete().prefix(prefix).options(deadline).exec().catch(() => {});
  else {
    for (const range of [{ start: `${keys.key}/m/`, end: prefix }, { start: `${keys.key}/m/${gen}0`, end: `${keys.key}/m0` }]) {
      await client.delete().inRange(range).options(deadline).exec().catch(() => {});
    }
  }
  return { won: txn.succeeded, rootText };
}

/**
 * A watcher's copy of the records: it applies each watch response (one transaction's events
 * arrive together), parsing only the records that changed, and patches the previous map with
 * them (ShardMap.patched: work that follows the changed ranges, not the map). A
 * response it cannot apply as a delta (a new generation, no snapshot yet) asks for a full read.
 *
 * Memory (#30: 2,000 subscribers on one machine): between changes it keeps the root, the small
 * records (mod, moves) decoded, and only the names of the pair records; their ranges live in the
 * compact map, where the patch finds a pair's old ranges (under its new ones) when its record changes.
 */
export class RecordWatchState {
  private root: MapRoot | undefined;
  /** Every record by name; a pair record's ranges are pairInMap(count) (they are in `last`) except while a change is pending. */
  private records = new Map<string, { decoded: DecodedRecord }>();
  private revision = 0;
  /** The map the records made last: the base of the next delta. */
  private last: ShardMap | undefined;
  /** Records changed since `last` was made, with what they held then (a response without the root leaves them here). */
  private before = new Map<string, DecodedRecord | undefined>();

  constructor(private readonly keys: EtcdMapKeys) {}

  /** Takes a full read as the base for later deltas (ignored when older than what it holds). */
  reset(s: EtcdSnapshot): void {
    if (s.revision < this.revision) return;
    this.revision = s.revision;
    this.root = s.layout === 2 ? s.root : undefined;
    this.records = new Map();
    if (s.layout === 2) for (const [name, r] of s.records) this.records.set(name, r.decoded.kind === 'pair' ? pairInMap(r.decoded.ranges.length) : { decoded: r.decoded });
    this.last = s.layout === 2 ? s.map : undefined;
    this.before.clear();
  }

  /**
   * Applies one response's events in order (etcd may put several transactions in one response):
   * a transaction's records come before its root, so each root event closes one change. Returns
   * the map of each change, oldest first, or 'resync' when a full read is needed (a new
   * generation, the root deleted, no base yet). After an error the next change resyncs too.
   */
  apply(events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }>, parseOld: (kv: IKeyValue) => ShardMap): ShardMap[] | 'resync' {
    try {
      return this.applyInOrder(events, parseOld);
    } catch (err) {
      this.root = undefined;
      this.last = undefined;
      throw err;
    }
  }

  private applyInOrder(events: Array<{ type: 'put' | 'delete'; kv: IKeyValue }>, parseOld: (kv: IKeyValue) => ShardMap): ShardMap[] | 'resync' {
    const out: ShardMap[] = [];
    for (const { type, kv } of events) {
      const revision = Number(kv.mod_revision);
      if (revision <= this.revision) continue;
      const key = kv.key.toString('utf8');
      if (key === this.keys.key) {
        if (type === 'delete') return 'resync';
        const text = kv.value.toString('utf8');
        let json: unknown;
        try {
          json = JSON.parse(text);
        } catch {
          json = undefined;
        }
        this.revision = revision;
        if (!isRecordRoot(json)) {
          this.root = undefined;
          this.records.clear();
          this.last = undefined;
          out.push(parseOld(kv));
          continue;
        }
        const root = parseRoot(json, `etcd key ${this.keys.key}`);
        if (this.root === undefined || root.gen !== this.root.gen || this.last === undefined) return 'resync';
        this.root = root;
        const changed = this.before;
        this.before = new Map();
        this.last = this.changedMap(this.last, root, changed);
        for (const name of changed.keys()) {
          const r = this.records.get(name);
          if (r?.decoded.kind === 'pair') this.records.set(name, pairInMap(r.decoded.ranges.length));
        }
        out.push(this.last);
        continue;
      }
      if (this.root === undefined || this.last === undefined) continue;
      const name = this.keys.recordName(key, this.root.gen);
      if (name === undefined) continue;
      if (!this.before.has(name)) {
        const was = this.records.get(name);
        // A pair record's old ranges are in the map the last change made (the patch finds them there).
        this.before.set(name, was !== undefined && isPairInMap(was) ? was.decoded : was?.decoded);
      }
      if (type === 'delete') this.records.delete(name);
      else {
        const text = kv.value.toString('utf8');
        this.records.set(name, { decoded: decodeRecord(name, text, `etcd key ${key}`) });
      }
    }
    return out;
  }

  /** The map after a change: `previous` patched, or (growth, an error to name) built whole from it and the changed records. */
  private changedMap(previous: ShardMap, root: MapRoot, changed: ReadonlyMap<string, DecodedRecord | undefined>): ShardMap {
    const patched = patchedMap(previous, root, this.records, changed);
    if (patched !== undefined) return patched;
    const whole = new Map<string, { decoded: DecodedRecord }>();
    const unchanged = new Map<string, ShardRange[]>();
    for (const r of previous.objectRanges()) {
      const name = `pair/${r.master}`;
      const rec = this.records.get(name);
      if (rec === undefined || !isPairInMap(rec)) continue;
      let list = unchanged.get(name);
      if (list === undefined) unchanged.set(name, (list = []));
      list.push(r);
    }
    for (const [name, r] of this.records) whole.set(name, isPairInMap(r) ? { decoded: { kind: 'pair', ranges: unchanged.get(name) ?? [] } } : r);
    return mapOf(this.keys, root, whole);
  }
}

const inMap: Array<{ decoded: DecodedRecord }> = [];

/** Stands for a pair record of `count` ranges that are the map's own (the watcher keeps no copy, only the count: one shared object per count). */
function pairInMap(count: number): { decoded: DecodedRecord } {
  return (inMap[count] ??= Object.freeze({ decoded: pairRangesInMap(count) }));
}

function isPairInMap(r: { decoded: DecodedRecord }): boolean {
  return r.decoded.kind === 'pair' && r.decoded.inMap !== undefined;
}
