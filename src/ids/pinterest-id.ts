import type { IdInput } from './codec.js';
import { PINTEREST_LAYOUT } from './layout.js';
import { ShardKitError } from '../errors.js';
import { LayoutCodec, ID_HI, ID_LO, idWords, joinHalves, loadId, TWO32 } from './layout-codec.js';

export interface PinterestIdParts {
  shard: number;
  type: number;
  localId: number;
}

const codec = new LayoutCodec(PINTEREST_LAYOUT);

export const PINTEREST_MAX_SHARD = 0xffff;
export const PINTEREST_MAX_TYPE = 0x3ff;
export const PINTEREST_MAX_LOCAL_ID = 2 ** 36 - 1;

/** Pinterest object IDs: 2 reserved bits | 16-bit shard | 10-bit type | 36-bit local id. */
export const pinterestId = {
  layout: PINTEREST_LAYOUT,
  encode(parts: PinterestIdParts): bigint {
    const { shard, type, localId } = parts;
    // Fast path for plain in-range integers; anything else goes through the codec, which validates.
    if (
      typeof shard === 'number' && (shard & 0xffff) === shard && typeof type === 'number' && (type & 0x3ff) === type &&
      typeof localId === 'number' && Number.isInteger(localId) && localId >= 0 && localId <= PINTEREST_MAX_LOCAL_ID
    ) {
      return joinHalves(shard * 0x4000 + type * 16 + Math.floor(localId / TWO32), localId >>> 0);
    }
    return codec.encode(parts as unknown as Record<string, number>);
  },
  /** `what` names the input in errors (`ids[3]` in a multi-get). */
  decode(input: IdInput, what = 'id'): PinterestIdParts {
    const id = loadId(input, what);
    const hi = idWords[ID_HI]!;
    const lo = idWords[ID_LO]!;
    if (hi > 0x3fffffff) throw new ShardKitError('INVALID_ID', `${what} ${id} has reserved bits set (not a pinterest id)`);
    return { shard: hi >>> 14, type: (hi >>> 4) & 0x3ff, localId: (hi & 0xf) * TWO32 + lo };
  },
};
