import { INSTAGRAM_MAX_SHARD } from '../../ids/instagram-id.js';
import { INSTAGRAM_EPOCH } from '../../ids/layout.js';
import { NEXT_ID_STATE } from '../shard-names.js';
import { postgresSchemaName, qi } from './postgres-ddl.js';


/** Session advisory lock keys of the generators: one per shard, apart from createShard's (0x5348xxxx). */
export const NEXT_ID_LOCK_BASE = 0x5349_0000;

/** SQLSTATEs our next_id() raises: the clock went back further than it waits out; the clock is outside the 41-bit range. */
export const CLOCK_BACKWARDS_SQLSTATE = 'SK001';
export const CLOCK_RANGE_SQLSTATE = 'SK002';

/** Last millisecond (since the epoch) with a non-negative signed 64-bit ID: 2^40 - 1 (about 34.8 years). */
export const MAX_MS = 2 ** 40 - 1;

/** What the in-process generator waits out by default (instagramId.generator, maxBackwardsMs). */
export const DEFAULT_MAX_BACKWARDS_MS = 10;

/**
 * `db00005.next_id()`: Instagram's ID generator inside PostgreSQL (SPEC §1, the seed's PL/pgSQL),
 * `(ms - epoch) << 23 | shard << 10 | seq`, usable as a column DEFAULT. The seed's version takes
 * `nextval() % 1024` with the current millisecond, which repeats an ID when the server's clock
 * steps back or a shard hands out more than 1024 IDs in one millisecond. This one follows the
 * in-process generator (src/ids/instagram-id.ts) rule for rule, so for the same clock readings
 * both produce the same bits: the sequence restarts at 0 in each new millisecond; the 1025th ID
 * of a millisecond waits for the next one; a clock behind the last ID by up to `maxBackwardsMs`
 * is waited out, and further back raises SK001 (CLOCK_MOVED_BACKWARDS) instead of repeating IDs.
 *
 * Its state, `last ms * 1024 + seq`, is a sequence: sequences are not transactional, so no rollback
 * can take an ID back, and every session sees the latest value. Read-compute-write happens under
 * a session advisory lock held only while the function runs (an exception block releases it on
 * any error, a cancel included), not until the caller's transaction commits: concurrent inserts
 * on a shard wait microseconds, never for each other's transactions.
 *
 * Only shards 0..8191 have one: the layout has 13 bits of shard.
 */
export function instagramNextIdDdl(shard: number, options: { epoch?: number; maxBackwardsMs?: number } = {}): string[] {
  if (shard > INSTAGRAM_MAX_SHARD) return [];
  const epoch = options.epoch ?? INSTAGRAM_EPOCH;
  const maxBackwards = options.maxBackwardsMs ?? DEFAULT_MAX_BACKWARDS_MS;
  // Numbers only from validated integers: nothing here comes from a request.
  for (const n of [shard, epoch]) if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${n}`);
  if (!Number.isSafeInteger(maxBackwards) || maxBackwards < 0 || maxBackwards > 60_000) throw new RangeError(`maxBackwardsMs must be in 0..60000: ${maxBackwards}`);
  const schema = qi(postgresSchemaName(shard));
  const state = `${schema}.${qi(NEXT_ID_STATE)}`;
  const lockKey = NEXT_ID_LOCK_BASE + shard;
  const clock = `floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - our_epoch`;
  const tooFarBack = `IF last_ms - now_ms > max_backwards THEN
          RAISE EXCEPTION USING ERRCODE = '${CLOCK_BACKWARDS_SQLSTATE}',
            MESSAGE = format('clock moved backwards by %s ms (more than %s ms); refusing to generate ids for shard %s', last_ms - now_ms, max_backwards, shard_id);
        END IF;`;
  return [
    // -1: no ID yet.
    `CREATE SEQUENCE IF NOT EXISTS ${state} AS bigint MINVALUE -1 START WITH -1 NO CYCLE`,
    `CREATE OR REPLACE FUNCTION ${schema}.next_id(OUT result bigint) LANGUAGE plpgsql VOLATILE AS $next_id$
DECLARE
  our_epoch CONSTANT bigint := ${epoch};
  shard_id CONSTANT bigint := ${shard};
  max_backwards CONSTANT bigint := ${maxBackwards};
  lock_key CONSTANT bigint := ${lockKey};
  packed bigint;
  last_ms bigint;
  seq_id bigint;
  now_ms bigint;
BEGIN
  -- Lock and unlock are both inside the block, so an interrupt (a cancel, a statement timeout)
  -- between any two statements lands in the handler, which releases the lock if this call holds it.
  BEGIN
    PERFORM pg_advisory_lock(lock_key);
    SELECT last_value INTO packed FROM ${state};
    now_ms := ${clock};
    IF packed = -1 THEN
      -- No ID yet: like the in-process generator, nothing to wait out.
      last_ms := now_ms;
      seq_id := 0;
    ELSE
      last_ms := floor(packed::numeric / 1024)::bigint;
      seq_id := packed - last_ms * 1024;
      IF now_ms < last_ms THEN
        LOOP
          ${tooFarBack}
          EXIT WHEN now_ms >= last_ms;
          now_ms := ${clock};
        END LOOP;
      END IF;
      IF now_ms = last_ms THEN
        seq_id := seq_id + 1;
        IF seq_id > 1023 THEN
          -- 1024 IDs in this millisecond: wait for the next one.
          LOOP
            now_ms := ${clock};
            ${tooFarBack}
            EXIT WHEN now_ms > last_ms;
          END LOOP;
          last_ms := now_ms;
          seq_id := 0;
        END IF;
      ELSE
        last_ms := now_ms;
        seq_id := 0;
      END IF;
    END IF;
    -- 40 bits, not the layout's 41: a later ms would make the ID negative in a signed bigint
    -- (and past the 2^63 - 1 every table of ours stores).
    IF last_ms < 0 OR last_ms > ${MAX_MS} THEN
      RAISE EXCEPTION USING ERRCODE = '${CLOCK_RANGE_SQLSTATE}', MESSAGE = format('clock is outside the range of epoch %s (0..%s ms after it)', our_epoch, ${MAX_MS});
    END IF;
    PERFORM setval('${state}'::regclass, last_ms * 1024 + seq_id);
    PERFORM pg_advisory_unlock(lock_key);
  EXCEPTION WHEN OTHERS OR query_canceled THEN
    IF EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid() AND granted
               AND classid = 0 AND objid = ${lockKey} AND objsubid = 1) THEN
      PERFORM pg_advisory_unlock(lock_key);
    END IF;
    RAISE;
  END;
  result := (last_ms << 23) | (shard_id << 10) | seq_id;
END
$next_id$`,
  ];
}

/** Drops a shard's generator (the objects fleet leaves a schema the lookups still use). */
export function dropInstagramNextIdDdl(shard: number): string[] {
  const schema = qi(postgresSchemaName(shard));
  return [`DROP FUNCTION IF EXISTS ${schema}.next_id()`, `DROP SEQUENCE IF EXISTS ${schema}.${qi(NEXT_ID_STATE)}`];
}
