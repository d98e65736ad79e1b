export { parseId, formatId, idReplacer, U64_MAX, type IdInput } from './codec.js';
export { PINTEREST_LAYOUT, INSTAGRAM_LAYOUT, INSTAGRAM_EPOCH, type IdLayout, type BitField } from './layout.js';
export { LayoutCodec, type Fields } from './layout-codec.js';
export { pinterestId, PINTEREST_MAX_SHARD, PINTEREST_MAX_TYPE, PINTEREST_MAX_LOCAL_ID, type PinterestIdParts } from './pinterest-id.js';
export { instagramId, INSTAGRAM_MAX_SHARD, type InstagramIdParts, type InstagramIdGenerator, type GeneratorOptions } from './instagram-id.js';
export { modShard } from './mod-shard.js';
