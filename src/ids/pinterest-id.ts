import type { IdInput } from './codec.js';
import { PINTEREST_LAYOUT } from './layout.js';
import { LayoutCodec } from './layout-codec.js';

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
    return codec.encode(parts as unknown as Record<string, number>);
  },
  decode(id: IdInput): PinterestIdParts {
    return codec.decode(id) as unknown as PinterestIdParts;
  },
};
