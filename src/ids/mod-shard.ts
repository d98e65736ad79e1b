import { createHash } from 'node:crypto';
import { ShardKitError } from '../errors.js';

/**
 * Mod shard (SPEC §4): md5 of the UTF-8 key read as a big-endian 128-bit integer, mod `shards`.
 * The mod is folded over the four 32-bit words so it needs no BigInt.
 */
export function modShard(key: string, shards = 4096): number {
  if (typeof key !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'key must be a string');
  if (!Number.isSafeInteger(shards) || shards < 1 || shards > 2 ** 21) {
    throw new ShardKitError('INVALID_ARGUMENT', `shards must be an integer in 1..${2 ** 21}`);
  }
  const d = createHash('md5').update(key, 'utf8').digest();
  let r = 0;
  for (let i = 0; i < 16; i += 4) r = (r * 2 ** 32 + d.readUInt32BE(i)) % shards;
  return r;
}
