/**
 * Splits the output of one `mariadb --batch --skip-column-names` session that selected several
 * tables in turn, each announced by a marker row (`SELECT '<boundary><tag>'`), into each table's
 * rows, as LOAD DATA reads them: one line per row, tab between fields, and newline, tab, NUL and
 * backslash inside values escaped by the client (so a line break is always a row's end).
 *
 * The boundary is random per copy (128 bits): a row equal to it would have to hold it. Bytes are
 * passed on as slices of the pieces read, never copied or decoded; only the few bytes that may be
 * the start of a marker line are held until the next piece shows whether they are.
 */
export interface TsvSink {
  /** A marker line: the tag after the boundary. */
  marker(tag: string): void;
  /** Rows of the current table (whole lines, or a line cut at the piece's end), and how many lines end in it. */
  data(bytes: Buffer, rows: number): void;
}

const NL = 10;

export class TsvSplitter {
  private held: Buffer | undefined;
  private atLineStart = true;

  constructor(private readonly boundary: Buffer, private readonly sink: TsvSink) {}

  feed(piece: Buffer): void {
    const buf = this.held === undefined ? piece : Buffer.concat([this.held, piece]);
    this.held = undefined;
    const b = this.boundary;
    let from = 0; // start of the data not yet passed on
    let i = 0;
    let rows = 0;
    while (i < buf.length) {
      if (this.atLineStart && buf[i] === b[0]) {
        const n = Math.min(b.length, buf.length - i);
        if (buf.compare(b, 0, n, i, i + n) === 0) {
          const nl = n === b.length ? buf.indexOf(NL, i + n) : -1;
          if (nl < 0) {
            // Maybe a marker: keep it for the next piece (it is short, or it is no marker).
            this.flush(buf, from, i, rows);
            this.held = buf.subarray(i);
            return;
          }
          this.flush(buf, from, i, rows);
          rows = 0;
          this.sink.marker(buf.toString('latin1', i + b.length, nl));
          i = nl + 1;
          from = i;
          continue;
        }
      }
      const nl = buf.indexOf(NL, i);
      if (nl < 0) {
        this.atLineStart = false;
        break;
      }
      rows++;
      i = nl + 1;
      this.atLineStart = true;
    }
    this.flush(buf, from, buf.length, rows);
  }

  /** The end of the output: held bytes that were no marker are rows (a last line without its newline counts). */
  end(): void {
    const held = this.held;
    this.held = undefined;
    if (held !== undefined && held.length > 0) {
      this.atLineStart = false;
      this.sink.data(held, 0);
    }
  }

  private flush(buf: Buffer, from: number, to: number, rows: number): void {
    if (to > from) this.sink.data(buf.subarray(from, to), rows);
  }
}
