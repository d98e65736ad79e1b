/** An LSN such as 0/3000060 as a byte position. */
export function parseLsn(lsn: string): bigint {
  const [hi, lo] = lsn.split('/');
  return (BigInt(`0x${hi}`) << 32n) | BigInt(`0x${lo}`);
}

/** A byte position as PostgreSQL writes an LSN (2F/1C0FFEE8). */
export function formatLsn(at: bigint): string {
  return `${(at >> 32n).toString(16).toUpperCase()}/${(at & 0xffffffffn).toString(16).toUpperCase()}`;
}
