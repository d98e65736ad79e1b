import { ShardKitError } from '../errors.js';
import type { IdInput } from './codec.js';
import { INSTAGRAM_EPOCH, INSTAGRAM_LAYOUT } from './layout.js';
import { LayoutCodec, ID_HI, ID_LO, idWords, joinHalves, loadId } from './layout-codec.js';

export interface InstagramIdParts {
  /** Milliseconds since the layout's epoch (the raw 41-bit field). */
  readonly ms: number;
  /** Unix milliseconds: epoch + ms. */
  readonly unixMs: number;
  /** The creation time (a new Date on each access). */
  readonly date: Date;
  readonly shard: number;
  readonly sequence: number;
}

/**
 * Decoded fields. `date` is a getter: building a Date costs ~4x the rest of a decode, and most
 * callers only want the shard. JSON.stringify still shows it, as an ISO string.
 */
class DecodedInstagramId implements InstagramIdParts {
  constructor(
    readonly ms: number,
    readonly unixMs: number,
    readonly shard: number,
    readonly sequence: number,
  ) {}

  get date(): Date {
    return new Date(this.unixMs);
  }

  toJSON(): { ms: number; unixMs: number; date: string; shard: number; sequence: number } {
    return { ms: this.ms, unixMs: this.unixMs, date: this.date.toISOString(), shard: this.shard, sequence: this.sequence };
  }
}

export interface GeneratorOptions {
  shard: number;
  epoch?: number;
  /** Clock in unix ms; injectable for tests. */
  clock?: () => number;
  /** A backwards step up to this many ms is waited out; a larger one throws CLOCK_MOVED_BACKWARDS. */
  maxBackwardsMs?: number;
}

export interface InstagramIdGenerator {
  readonly shard: number;
  next(): bigint;
}

const codec = new LayoutCodec(INSTAGRAM_LAYOUT);
export const INSTAGRAM_MAX_SHARD = 0x1fff;
export const INSTAGRAM_MAX_MS = 2 ** 41 - 1;
const TWO9 = 2 ** 9;
const TWO23 = 2 ** 23;

/** Instagram IDs: 41-bit ms since epoch | 13-bit shard | 10-bit sequence (the PL/pgSQL next_id()). */
export const instagramId = {
  layout: INSTAGRAM_LAYOUT,
  decode(id: IdInput, epoch = INSTAGRAM_EPOCH): InstagramIdParts {
    if (!Number.isSafeInteger(epoch) || epoch < 0) throw new ShardKitError('INVALID_ARGUMENT', 'epoch must be a non-negative integer (unix ms)');
    loadId(id);
    const hi = idWords[ID_HI]!;
    const lo = idWords[ID_LO]!;
    // 41-bit ms = all 32 bits of hi and the top 9 of lo; then 13-bit shard, 10-bit sequence.
    const ms = hi * TWO9 + (lo >>> 23);
    return new DecodedInstagramId(ms, epoch + ms, (lo >>> 10) & 0x1fff, lo & 0x3ff);
  },
  /** `(ms - epoch) << 23 | shard << 10 | seq % 1024`, where `ms` is the raw since-epoch field. */
  encode(parts: { ms: number; shard: number; sequence: number }): bigint {
    return codec.encode({ ms: parts.ms, shard: parts.shard, sequence: parts.sequence % 1024 });
  },
  generator(options: GeneratorOptions): InstagramIdGenerator {
    return new Generator(options);
  },
};

class Generator implements InstagramIdGenerator {
  readonly shard: number;
  private readonly epoch: number;
  private readonly clock: () => number;
  private readonly maxBackwardsMs: number;
  // -Infinity, not -1: a clock just before the epoch must fail the range check, not match lastMs.
  private lastMs = Number.NEGATIVE_INFINITY;
  private seq = 0;
  private readonly shardBits: number;

  constructor(o: GeneratorOptions) {
    if (!Number.isInteger(o.shard) || o.shard < 0 || o.shard > INSTAGRAM_MAX_SHARD) {
      throw new ShardKitError('INVALID_ARGUMENT', `shard must be an integer in 0..${INSTAGRAM_MAX_SHARD}`);
    }
    this.shard = o.shard;
    this.epoch = o.epoch ?? INSTAGRAM_EPOCH;
    if (!Number.isSafeInteger(this.epoch) || this.epoch < 0) throw new ShardKitError('INVALID_ARGUMENT', 'epoch must be a non-negative integer (unix ms)');
    this.clock = o.clock ?? Date.now;
    this.maxBackwardsMs = o.maxBackwardsMs ?? 10;
    if (!(this.maxBackwardsMs >= 0 && this.maxBackwardsMs <= 60_000)) throw new ShardKitError('INVALID_ARGUMENT', 'maxBackwardsMs must be in 0..60000');
    this.shardBits = o.shard * 1024;
  }

  next(): bigint {
    let now = this.now();
    if (now < this.lastMs) now = this.waitOutBackwards(now);
    if (now === this.lastMs) {
      if (++this.seq > 1023) {
        // 1024 IDs used in this millisecond: wait for the next one.
        do now = this.now();
        while (now <= this.lastMs && this.lastMs - now <= this.maxBackwardsMs);
        if (now < this.lastMs) this.tooFarBack(now);
        if (!(now <= INSTAGRAM_MAX_MS)) this.outOfRange();
        this.lastMs = now;
        this.seq = 0;
      }
    } else {
      if (!(now >= 0 && now <= INSTAGRAM_MAX_MS)) this.outOfRange();
      this.lastMs = now;
      this.seq = 0;
    }
    const ms = this.lastMs;
    // hi = top 32 bits of ms (41 bits shifted left 23); lo = low 9 bits of ms | shard | seq.
    return joinHalves(Math.floor(ms / TWO9), (ms % TWO9) * TWO23 + this.shardBits + this.seq);
  }

  private waitOutBackwards(now: number): number {
    while (now < this.lastMs) {
      if (this.lastMs - now > this.maxBackwardsMs) this.tooFarBack(now);
      now = this.now();
    }
    return now;
  }

  /** Whole milliseconds since the epoch (an injected clock may return fractions, e.g. performance.now()). */
  private now(): number {
    return Math.floor(this.clock()) - this.epoch;
  }

  private outOfRange(): never {
    throw new ShardKitError('INVALID_ARGUMENT', `clock is outside the 41-bit range of epoch ${this.epoch}`);
  }

  private tooFarBack(now: number): never {
    throw new ShardKitError(
      'CLOCK_MOVED_BACKWARDS',
      `clock moved backwards by ${this.lastMs - now} ms (more than ${this.maxBackwardsMs} ms); refusing to generate ids for shard ${this.shard}`,
    );
  }
}
