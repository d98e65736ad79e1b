import type { ColumnKind } from './column-kinds.js';

const DATETIME = /^(\d{4})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?)?(\+00(?::?00)?)?$/;

/**
 * Where a run starts reading: the stored high-water mark minus the overlap. Rows are re-read
 * from there because a transaction can commit a row whose changed value is older than rows
 * another transaction committed first; the overlap must exceed the longest such transaction.
 * Integer change columns (version counters) take the overlap as a count. The result is in the
 * server's own text form, so it compares as the column does.
 */
export function startOf(highWater: string, kind: ColumnKind, overlapSeconds: number): string {
  if (overlapSeconds === 0) return highWater;
  if (kind === 'int' || kind === 'bigint') {
    if (!/^-?[0-9]+$/.test(highWater)) return highWater;
    return String(BigInt(highWater) - BigInt(Math.ceil(overlapSeconds)));
  }
  const m = DATETIME.exec(highWater);
  if (m === null) return highWater;
  const micros = m[7] === undefined ? 0 : Number(m[7].padEnd(6, '0'));
  const ms = Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4] ?? 0), Number(m[5] ?? 0), Number(m[6] ?? 0));
  // Microseconds kept apart from the Date (which has milliseconds only).
  const total = BigInt(ms) * 1000n + BigInt(micros) - BigInt(Math.round(overlapSeconds * 1e6));
  const whole = total / 1_000_000n;
  const frac = total % 1_000_000n;
  const d = new Date(Number(whole) * 1000);
  const pad = (n: number, w = 2) => String(n).padStart(w, '0');
  const day = `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  if (kind === 'date') return day;
  return `${day} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}.${String(frac).padStart(6, '0')}${m[8] !== undefined ? '+00' : ''}`;
}
