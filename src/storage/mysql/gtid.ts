/**
 * MariaDB GTID positions (`domain-server-seq,...`), for the tools that wait on a slave.
 */

/** `d-s-n,d-s-n` -> domain -> the part's text and its sequence number. */
export function gtidDomains(pos: string): Map<number, { text: string; seq: bigint }> {
  const out = new Map<number, { text: string; seq: bigint }>();
  for (const part of pos.split(',').map((x) => x.trim()).filter((x) => x !== '')) {
    const m = /^(\d+)-(\d+)-(\d+)$/.exec(part);
    if (m !== null) out.set(Number(m[1]), { text: part, seq: BigInt(m[3]!) });
  }
  return out;
}

/**
 * The parts of `want` that `have` (a slave's gtid_current_pos) has not reached. A slave waiting
 * with MASTER_GTID_WAIT for the master's whole gtid_binlog_pos waits for ever on a domain it wrote
 * itself and the master only replicated (a move's fence domain after a planned failover: the old
 * master's own GTIDs are in its binlog, never in its gtid_slave_pos).
 */
export function gtidsNotReached(want: string, have: string): string {
  const reached = gtidDomains(have);
  return [...gtidDomains(want)].filter(([d, g]) => (reached.get(d)?.seq ?? -1n) < g.seq).map(([, g]) => g.text).join(',');
}
