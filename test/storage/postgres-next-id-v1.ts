/**
 * The generator every PostgreSQL object shard got before issue 20, kept verbatim as a fixture: a
 * session advisory lock around a read-modify-write of next_id_state on every call. The upgrade
 * test creates a shard with it, hands out IDs, and checks that `shardkit init` replaces it.
 */
import { INSTAGRAM_MAX_SHARD } from '../../src/ids/instagram-id.js';
import { INSTAGRAM_EPOCH } from '../../src/ids/layout.js';
import { CLOCK_BACKWARDS_SQLSTATE, CLOCK_RANGE_SQLSTATE, DEFAULT_MAX_BACKWARDS_MS, MAX_MS } from '../../src/storage/postgres/instagram-next-id.js';
import { postgresSchemaName, qi } from '../../src/storage/postgres/postgres-ddl.js';
import { NEXT_ID_STATE } from '../../src/storage/shard-names.js';

export function instagramNextIdDdlV1(shard: number, options: { epoch?: number; maxBackwardsMs?: number } = {}): string[] {
  if (shard > INSTAGRAM_MAX_SHARD) return [];
  const epoch = options.epoch ?? INSTAGRAM_EPOCH;
  const maxBackwards = options.maxBackwardsMs ?? DEFAULT_MAX_BACKWARDS_MS;
  // Numbers only from validated integers: nothing here comes from a request.
  for (const n of [shard, epoch]) if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${n}`);
  if (!Number.isSafeInteger(maxBackwards) || maxBackwards < 0 || maxBackwards > 60_000) throw new RangeError(`maxBackwardsMs must be in 0..60000: ${maxBackwards}`);
  const schema = qi(postgresSchemaName(shard));
  const state = `${schema}.${qi(NEXT_ID_STATE)}`;
  const lockKey = 0x5349_0000 + shard;
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
