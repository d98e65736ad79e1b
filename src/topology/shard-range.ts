// The shapes of the shard map's ranges, apart from ShardMap so the shard table can use them without an import cycle.

/** A range of logical shards served by one master/slave pair (the seed's config entry). */
export interface ShardRange {
  range: [number, number];
  master: string;
  slave?: string;
  /** Whether new objects may be placed on these shards. Mod-shard ranges have no `open`. */
  open?: boolean;
  /**
   * Set while a move (or failover) holds this range for its cutover (docs/moves.md): services
   * hold writes to it for at most `holdMs` after `frozenAt`, then ignore the freeze.
   */
  frozen?: RangeFreeze;
}

/** A master and its optional slave: one side of a move. */
export interface HostPair {
  master: string;
  slave?: string;
}

/** The freeze a move puts on the range it is about to switch (written by src/moves, read by services). */
export interface RangeFreeze {
  /** The id of the move in `moves` that froze the range. */
  id: string;
  source: HostPair;
  target: HostPair;
  /** Wall-clock ms since the epoch when the freeze was written. */
  frozenAt: number;
  /** How long services hold writes to the range before they give up on the freeze. */
  holdMs: number;
}

/**
 * Where a shard lives. One object per distinct route, shared by every shard that has it (#30: no
 * object per shard at 65,536 shards): it does not name the shard, which the caller already has.
 */
export interface ShardLocation {
  master: string;
  slave?: string;
  open: boolean;
  /** The freeze on the shard's range, whether or not its hold budget has run out. */
  frozen?: RangeFreeze;
}

