import type { TableProgress } from '../move-engine.js';
import { DumpRowCounter } from './dump-row-count.js';

const MARKER = /-- (Current Database: |Dumping data for table )`((?:[^`]|``)+)`\n/g;
/** Longest marker kept across chunk borders (64-character names, doubled backticks). */
const CARRY = 320;

/**
 * The table a running dump is on, and the rows (exact: DumpRowCounter) and bytes of its data
 * so far, read off the dump's stream piece by piece: for per-table progress (#29 item 6). A
 * marker split across two pieces is found in the second, never counted twice.
 */
export class DumpTableProgress {
  private carry = '';
  private database = '';
  private current: TableProgress | undefined;
  private readonly rows = new DumpRowCounter();

  /** The table being dumped now (undefined before the first table's data and after the dump). */
  get table(): TableProgress | undefined {
    return this.current === undefined ? undefined : { ...this.current };
  }

  /** Reads the next piece of the dump; returns its rows (all of them, inside a table or not). */
  feed(piece: string): number {
    const text = this.carry + piece;
    let at = 0;
    let rows = 0;
    MARKER.lastIndex = 0;
    for (let m = MARKER.exec(text); m !== null; m = MARKER.exec(text)) {
      const end = m.index + m[0].length;
      // Seen whole in the previous piece already.
      if (end <= this.carry.length) continue;
      // The bytes up to the marker's end go to the table before it; the new table's start after it.
      const cut = end - this.carry.length;
      rows += this.count(piece.slice(at, cut));
      at = Math.max(at, cut);
      const name = m[2]!.replace(/``/g, '`');
      if (m[1] === 'Current Database: ') {
        this.database = name;
        this.current = undefined;
      } else this.current = { table: this.database === '' ? name : `${this.database}.${name}`, rowsCopied: 0, bytesCopied: 0 };
    }
    rows += this.count(piece.slice(at));
    this.carry = text.slice(-CARRY);
    return rows;
  }

  private count(part: string): number {
    if (part.length === 0) return 0;
    const n = this.rows.count(part);
    if (this.current !== undefined) {
      this.current.bytesCopied += part.length;
      this.current.rowsCopied += n;
    }
    return n;
  }
}
