/**
 * How a shard file that a move carried away is marked (shard-file.ts says what a handle does with
 * it; the SQLite move engine sets it). Apart from shard-file.ts so the package root can export
 * them without its types naming the driver's.
 */
export const MOVED_BIT = 0x100;
export const MOVED_TABLE_PREFIX = 'moved__';
