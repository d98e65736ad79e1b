import { ShardKitError } from '../errors.js';
import type { MappingItem } from '../storage/shard-backend.js';
import type { ListOrder } from './types.js';

/*
 * A mapping cursor is the keyset position (sequence, toId) of the last item served, the order it
 * was served in, and a 32-bit tag of the list it came from (mapping name and from ID): 22 bytes
 * [version][order][int64 sequence][uint64 toId][uint32 list tag], base64url. Opaque to clients;
 * anything that does not decode exactly, or that belongs to another list, is INVALID_ARGUMENT
 * (a cursor of another list would otherwise page silently from a foreign position).
 * Version 1 cursors (18 bytes, no tag), handed out before the tag existed, are still read.
 */
const VERSION = 2;
const BYTES = 22;
const V1_BYTES = 18;
const TEXT = /^(?:[A-Za-z0-9_-]{24}|[A-Za-z0-9_-]{30})$/;
const MAX_ID = (1n << 63n) - 1n;

/** The list a cursor belongs to: a mapping's name and the ID it is listed from. */
export interface CursorList {
  mapping: string;
  from: bigint;
}

/** FNV-1a over the mapping name's UTF-16 units, a separator, and the from ID's decimal digits. */
function listTag(list: CursorList): number {
  let h = 0x811c9dc5;
  const text = `${list.mapping}\u0000${list.from}`;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

export function encodeCursor(item: MappingItem, order: ListOrder, list: CursorList): string {
  const buf = Buffer.alloc(BYTES);
  buf[0] = VERSION;
  buf[1] = order === 'desc' ? 1 : 0;
  buf.writeBigInt64BE(BigInt(item.sequence), 2);
  buf.writeBigUInt64BE(item.toId, 10);
  buf.writeUInt32BE(listTag(list), 18);
  return buf.toString('base64url');
}

const MAX_SEQUENCE = BigInt(Number.MAX_SAFE_INTEGER);
const MIN_SEQUENCE = BigInt(Number.MIN_SAFE_INTEGER);

function bad(why: string): never {
  throw new ShardKitError('INVALID_ARGUMENT', `invalid cursor: ${why}`);
}

export function decodeCursor(cursor: unknown, order: ListOrder, list: CursorList): MappingItem {
  if (typeof cursor !== 'string' || !TEXT.test(cursor)) bad('not a cursor returned by this API');
  const buf = Buffer.from(cursor as string, 'base64url');
  const expected = buf[0] === 1 ? V1_BYTES : BYTES;
  if (buf.length !== expected || buf.toString('base64url') !== cursor) bad('not a cursor returned by this API');
  if (buf[0] !== VERSION && buf[0] !== 1) bad('unknown cursor version');
  if (buf[1]! > 1) bad('not a cursor returned by this API');
  if ((buf[1] === 1 ? 'desc' : 'asc') !== order) bad(`the cursor belongs to a listing in ${buf[1] === 1 ? 'desc' : 'asc'} order`);
  if (buf[0] === VERSION && buf.readUInt32BE(18) !== listTag(list)) bad(`the cursor belongs to another list than ${list.mapping} of ${list.from}`);
  const sequence = buf.readBigInt64BE(2);
  if (sequence > MAX_SEQUENCE || sequence < MIN_SEQUENCE) bad('sequence out of range');
  const toId = buf.readBigUInt64BE(10);
  if (toId > MAX_ID) bad('id out of range');
  return { sequence: Number(sequence), toId };
}
