import { mkdir, readdir, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ShardKitError } from '../../errors.js';
import type { MoveProgress } from '../shard-map.js';
import { checkProgressId, parseProgressRecord, type MoveProgressRecords } from '../move-progress-records.js';
import { writeFileAtomic } from './atomic-write.js';

/**
 * Move progress beside a topology file: one small file per move in `<topology file>.progress/`,
 * each replaced atomically. Not under the map's lock and never the map's file, so a progress
 * write neither waits for map writers nor wakes the services watching the map.
 */
export class FileMoveProgressRecords implements MoveProgressRecords {
  constructor(readonly dir: string) {}

  async readAll(): Promise<Map<string, MoveProgress>> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return new Map();
      throw new ShardKitError('INTERNAL', `cannot read move progress directory ${this.dir}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`, { cause: err });
    }
    const out = new Map<string, MoveProgress>();
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
      out.set(name.slice(0, -'.json'.length), parseProgressRecord(text, path));
    }
    return out;
  }

  async put(id: string, progress: MoveProgress): Promise<void> {
    const path = join(this.dir, `${checkProgressId(id)}.json`);
    const text = JSON.stringify(parseProgressRecord(JSON.stringify(progress), path));
    await mkdir(this.dir, { recursive: true });
    await writeFileAtomic(path, `${text}\n`);
  }

  async remove(id: string): Promise<void> {
    await unlink(join(this.dir, `${checkProgressId(id)}.json`)).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'ENOENT') throw err;
    });
  }
}
