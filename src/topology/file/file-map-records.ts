import { createHash } from 'node:crypto';
import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';
import type { ShardMap } from '../shard-map.js';
import { decodeRecord, encodeRecords, makeRoot, type DecodedRecord, type MapRoot } from '../map-records.js';
import { mapFromRecords, patchedMap } from '../record-patch.js';
import { writeFileAtomic } from './atomic-write.js';

/** Records written at once by a large change (a first write, an upgrade). */
const WRITE_PARALLEL = 16;

const hashOf = (text: string): string => createHash('sha256').update(text).digest('hex').slice(0, 16);

/**
 * The file store's record layout (#30), the etcd layout's model on a file system: the topology
 * file holds the root, which names each record by a hash of its content; the records are files
 * `<file>.records/<record>.<hash>.json`, written before the root and never rewritten in place. A
 * reader that read a root finds exactly the records it names (a record changed by a later write
 * is a new file), so the root's atomic rename is the compare-and-set's one visible step: a writer
 * that dies before it leaves only files nobody names. A watcher reads the new root and only the
 * records whose hash changed, and patches its previous map with them.
 */
export class FileMapRecords {
  readonly dir: string;
  /** What the last map was made of: the base of the next delta. */
  private held: { root: MapRoot; records: Map<string, { hash: string; decoded: DecodedRecord }>; map: ShardMap } | undefined;

  constructor(readonly path: string) {
    this.dir = `${path}.records`;
  }

  fileOf(name: string, hash: string): string {
    return join(this.dir, `${name.replace('/', '~')}.${hash}.json`);
  }

  /** The map a root names; undefined when a record file is gone (a later writer collected it: read the root again). */
  async mapOf(root: MapRoot): Promise<ShardMap | undefined> {
    const files = root.files ?? {};
    const base = this.held;
    const records = new Map<string, { hash: string; decoded: DecodedRecord }>();
    const before = new Map<string, DecodedRecord | undefined>();
    const toRead: Array<[string, string]> = [];
    for (const [name, hash] of Object.entries(files)) {
      const had = base?.records.get(name);
      if (had !== undefined && had.hash === hash) records.set(name, had);
      else toRead.push([name, hash]);
    }
    for (let i = 0; i < toRead.length; i += WRITE_PARALLEL) {
      const batch = await Promise.all(toRead.slice(i, i + WRITE_PARALLEL).map(async ([name, hash]) => {
        const file = this.fileOf(name, hash);
        try {
          return { name, hash, text: await readFile(file, 'utf8'), file };
        } catch (err) {
          if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
          throw new ShardKitError('INTERNAL', `cannot read shard map record ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
        }
      }));
      for (const r of batch) {
        if (r === undefined) return undefined;
        if (hashOf(r.text) !== r.hash) throw new ShardKitError('INVALID_CONFIG', `shard map record ${r.file} does not match its hash (edited by hand?)`);
        records.set(r.name, { hash: r.hash, decoded: decodeRecord(r.name, r.text, r.file) });
      }
    }
    if (base !== undefined) {
      for (const [name, rec] of base.records) if (records.get(name) !== rec) before.set(name, rec.decoded);
      for (const name of records.keys()) if (!base.records.has(name)) before.set(name, undefined);
    }
    const map = (base === undefined ? undefined : patchedMap(base.map, root, records, before)) ?? this.build(root, records);
    if (this.held === undefined || this.held.root.version <= root.version) this.held = { root, records, map };
    return map;
  }

  private build(root: MapRoot, records: ReadonlyMap<string, { decoded: DecodedRecord }>): ShardMap {
    return mapFromRecords(root, records, `topology file ${this.path} and its records ${this.dir}`, (n) => this.fileOf(n, (root.files ?? {})[n]!));
  }

  /**
   * Writes the record files of `stored` that `current` (the root on disk, if it is one) does not
   * name already, and returns the root text to rename over the topology file.
   */
  async writeRecords(stored: ShardMap, current: MapRoot | undefined): Promise<string> {
    const json = stored.toJSON();
    const next = encodeRecords(json);
    const files: Record<string, string> = {};
    const toWrite: Array<[string, string, string]> = [];
    for (const [name, text] of next) {
      const hash = hashOf(text);
      files[name] = hash;
      if (current?.files?.[name] !== hash) toWrite.push([name, hash, text]);
    }
    await mkdir(this.dir, { recursive: true });
    for (let i = 0; i < toWrite.length; i += WRITE_PARALLEL) {
      await Promise.all(toWrite.slice(i, i + WRITE_PARALLEL).map(([name, hash, text]) => writeFileAtomic(this.fileOf(name, hash), text)));
    }
    const root: MapRoot = { ...makeRoot(json, stored.version, '1', next.size), files };
    return `${JSON.stringify(root)}\n`;
  }

  /**
   * Deletes record files named by neither `root` nor `previous` (a reader that just read the
   * previous root still finds its records; one that read an older root reads the root again).
   * A dead writer's temp files (dot-files) are left alone: one may belong to a writer still at work.
   */
  async collect(root: MapRoot, previous: MapRoot | undefined): Promise<void> {
    const keep = new Set<string>();
    for (const r of [root, previous]) for (const [name, hash] of Object.entries(r?.files ?? {})) keep.add(this.fileOf(name, hash));
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    await Promise.all(names.filter((n) => n.endsWith('.json') && !n.startsWith('.') && !keep.has(join(this.dir, n))).map((n) => unlink(join(this.dir, n)).catch(() => {})));
  }
}

