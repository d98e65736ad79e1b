import { ShardKitError } from '../errors.js';
import type { MappingItem } from '../storage/shard-backend.js';
import type { ListOrder } from './types.js';

/*
 * A mapping cursor is the keyset position (sequence, toId) of the last item served, plus the
 * order it was served in: 18 bytes [version][order][int64 sequence][uint64 toId], base64url.
 * Opaque to clients; anything that does not decode exactly is INVALID_ARGUMENT.
 */
const VERSION = 1;
const BYTES = 18;
const TEXT = /^[A-Za-z0-9_-]{24}$/;
const MAX_ID = (1n << 63n) - 1n;

export function encodeCursor(item: MappingItem, order: ListOrder): string {
  const buf = Buffer.alloc(BYTES);
  buf[0] = VERSION;
  buf[1] = order === 'desc' ? 1 : 0;
  buf.writeBigInt64BE(BigInt(item.sequence), 2);
  buf.writeBigUInt64BE(item.toId, 10);
  return buf.toString('base64url');
}

const MAX_SEQUENCE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SEQUENCE = BigInt(Number.MIN_SAFE_INTEGER);

function bad(why: string): never {
  throw new ShardKitError('INVALID_ARGUMENT', `invalid cursor: ${why}`);
}

export function decodeCursor(cursor: unknown, order: ListOrder): MappingItem {
  if (typeof cursor !== 'string' || !TEXT.test(cursor)) bad('not a cursor returned by this API');
  const buf = Buffer.from(cursor as string, 'base64url');
  if (buf.length !== BYTES || buf.toString('base64url') !== cursor) bad('not a cursor returned by this API');
  if (buf[0] !== VERSION) bad('unknown cursor version');
  if (buf[1]! > 1) bad('not a cursor returned by this API');
  if ((buf[1] === 1 ? 'desc' : 'asc') !== order) bad(`the cursor belongs to a listing in ${buf[1] === 1 ? 'desc' : 'asc'} order`);
  const sequence = buf.readBigInt64BE(2);
  if (sequence > MAX_SEQUENCE || sequence < MIN_SEQUENCE) bad('sequence out of range');
  const toId = buf.readBigUInt64BE(10);
  if (toId > MAX_ID) bad('id out of range');
  return { sequence: Number(sequence), toId };
}
