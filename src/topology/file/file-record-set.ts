import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';
import { checkRecordName, parseRecord, recordText, type RecordKind, type RecordSet } from '../record-set.js';
import { writeFileAtomic } from './atomic-write.js';

/**
 * Records beside a topology file: one small file per record in a directory of its own (e.g.
 * `<topology file>.progress/`), each replaced atomically. Not under the map's lock and never the
 * map's file, so a write here neither waits for map writers nor wakes the services watching the map.
 */
export class FileRecordSet<T> implements RecordSet<T> {
  constructor(readonly dir: string, private readonly kind: RecordKind<T>) {}

  async readAll(): Promise<Map<string, T>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new ShardKitError('INTERNAL', `cannot read the ${this.kind.what} directory ${this.dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
    const out = new Map<string, T>();
    for (const name of names.sort()) {
      // Temp files of a write in flight start with a dot.
      if (!name.endsWith('.json') || name.startsWith('.')) continue;
      const path = join(this.dir, name);
      let text: string;
      try {
        text = await readFile(path, 'utf8');
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      out.set(name.slice(0, -'.json'.length), parseRecord(this.kind, text, path));
    }
    return out;
  }

  async put(name: string, value: T): Promise<void> {
    const path = join(this.dir, `${checkRecordName(this.kind, name)}.json`);
    const text = recordText(this.kind, value, path);
    await mkdir(this.dir, { recursive: true });
    await writeFileAtomic(path, `${text}\n`);
  }

  async remove(name: string): Promise<void> {
    await unlink(join(this.dir, `${checkRecordName(this.kind, name)}.json`)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
