/** An LSN such as 0/3000060 as a byte position. */
export function parseLsn(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** A byte position as PostgreSQL writes an LSN (2F/1C0FFEE8). */
export function formatLsn(at: bigint): string {
  return `${(at >> 32n).toString(16).toUpperCase()}/${(at & 0xffffffffn).toString(16).toUpperCase()}`;
}

/** WAL segment size of the servers shardkit creates (initdb's default). */
export const WAL_SEGMENT_BYTES = 16n * 1024n * 1024n;

/**
 * Where to start reading WAL to find every record that ends past `at`: a standby may hold part of
 * a record (a flush stops at a page boundary inside a record that spans it), and a reader started
 * at `at` skips to the next record. Up to 64 KiB earlier, within `at`'s segment.
 */
export function recordSearchStart(at: bigint): bigint {
  const segmentStart = at - (at % WAL_SEGMENT_BYTES);
  return at - 65_536n > segmentStart ? at - 65_536n : segmentStart;
}
