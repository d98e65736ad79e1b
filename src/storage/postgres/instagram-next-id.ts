import { INSTAGRAM_MAX_SHARD } from '../../ids/instagram-id.js';
import { INSTAGRAM_EPOCH } from '../../ids/layout.js';
import { NEXT_ID_COUNTER, NEXT_ID_STATE } from '../shard-names.js';
import { postgresSchemaName, qi } from './postgres-ddl.js';


/**
 * Advisory lock keys of the generators, one per shard, apart from createShard's (0x5348xxxx). Only
 * a jump to a new millisecond takes it, as a transaction-level lock inside a subtransaction that
 * is always rolled back, so it is released when the jump ends, whatever ends it.
 */
export const NEXT_ID_LOCK_BASE = 0x5349_0000;

/** SQLSTATEs our next_id() raises: the clock went back further than it waits out; the clock is outside the 41-bit range. */
export const CLOCK_BACKWARDS_SQLSTATE = 'SK001';
export const CLOCK_RANGE_SQLSTATE = 'SK002';
/** Raised and caught inside next_id() only: ends the jump's subtransaction, which releases its lock. */
const RELEASE_SQLSTATE = 'SK000';

/** Last millisecond (since the epoch) with a non-negative signed 64-bit ID: 2^40 - 1 (about 34.8 years). */
export const MAX_MS = 2 ** 40 - 1;

/** What the in-process generator waits out by default (instagramId.generator, maxBackwardsMs). */
export const DEFAULT_MAX_BACKWARDS_MS = 10;

/** The server clock in whole unix milliseconds, read once per check. */
export const SERVER_CLOCK_SQL = 'floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint';

export interface InstagramNextIdOptions {
  epoch?: number;
  maxBackwardsMs?: number;
  /**
   * Tests only: an SQL expression for the clock in unix ms (default SERVER_CLOCK_SQL), so a test
   * can step the clock back. Never from configuration.
   */
  clockSql?: string;
}

/**
 * `db00005.next_id()`: Instagram's ID generator inside PostgreSQL (SPEC §1, the seed's PL/pgSQL),
 * `(ms - epoch) << 23 | shard << 10 | seq`, usable as a column DEFAULT. The seed's version takes
 * `nextval() % 1024` with the current millisecond, which repeats an ID when the server's clock
 * steps back or a shard hands out more than 1024 IDs in one millisecond. This one follows the
 * in-process generator (src/ids/instagram-id.ts) rule for rule, so for the same clock readings
 * one session gets the same bits from both: the sequence restarts at 0 in each new millisecond;
 * the 1025th ID of a millisecond waits for the next one; a clock behind the last millisecond by
 * up to `maxBackwardsMs` is waited out, and further back raises SK001 (CLOCK_MOVED_BACKWARDS).
 *
 * Two sequences (not transactional: no rollback takes a value back, every session sees the
 * newest value at once):
 * - `next_id_state` holds `base * 1024`, where `base` is the millisecond of the last jump. Only a
 *   jump writes it, under the shard's lock, always to a later millisecond than it holds.
 * - `next_id_counter` counts `ms * 1024 + seq`: a jump sets it to `base * 1024`, then every
 *   call's `nextval` takes the next value.
 * A call reads `base`, then takes `v = nextval(counter)`, and keeps `v` only when `v`'s millisecond
 * is `base` (which also means seq < 1024) and the clock agrees: no lock, one atomic increment.
 * Otherwise (a new millisecond, 1024 used up, the clock behind) it waits as the in-process
 * generator does and jumps: under the lock, if `base` is still behind the clock, set the counter
 * to `now * 1024`, then the state, and return `now`'s seq 0. docs/postgres.md proves that no two
 * calls return the same value, whatever the interleaving, cancel or crash.
 *
 * Only shards 0..8191 have one: the layout has 13 bits of shard.
 */
export function instagramNextIdDdl(shard: number, options: InstagramNextIdOptions = {}): string[] {
  if (shard > INSTAGRAM_MAX_SHARD) return [];
  const epoch = options.epoch ?? INSTAGRAM_EPOCH;
  const maxBackwards = options.maxBackwardsMs ?? DEFAULT_MAX_BACKWARDS_MS;
  // Numbers only from validated integers: nothing here comes from a request.
  for (const n of [shard, epoch]) if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`not a non-negative integer: ${n}`);
  if (!Number.isSafeInteger(maxBackwards) || maxBackwards < 0 || maxBackwards > 60_000) throw new RangeError(`maxBackwardsMs must be in 0..60000: ${maxBackwards}`);
  const schema = qi(postgresSchemaName(shard));
  const state = `${schema}.${qi(NEXT_ID_STATE)}`;
  const counter = `${schema}.${qi(NEXT_ID_COUNTER)}`;
  // regclass literals are resolved once, when the function's plans are made.
  const stateReg = `${literal(state)}::regclass`;
  const counterReg = `${literal(counter)}::regclass`;
  const clock = `(${options.clockSql ?? SERVER_CLOCK_SQL}) - our_epoch`;
  // The state's millisecond; -1 before the first jump (NULL: never set; -1: the start value).
  // (x + 1024) >> 10 shifts a non-negative number, so -1 maps to -1 without relying on >> of a negative.
  const readBase = `((coalesce(pg_sequence_last_value(${stateReg}), -1) + 1024) >> 10) - 1`;
  const tooFarBack = `IF base - now_ms > max_backwards THEN
          RAISE EXCEPTION USING ERRCODE = '${CLOCK_BACKWARDS_SQLSTATE}',
            MESSAGE = format('clock moved backwards by %s ms (more than %s ms); refusing to generate ids for shard %s', base - now_ms, max_backwards, shard_id);
        END IF;`;
  const v1State = qi(`${NEXT_ID_STATE}_v1`);
  return [
    // A shard made before the counter existed: its old next_id() must never run beside the new
    // one (it writes the state on every call). Renaming the state takes an ACCESS EXCLUSIVE lock,
    // so this waits for every transaction that called the old function, and dropping it makes
    // any later call of the old function (a transaction still holding its definition) fail
    // instead of handing out an ID. The old function's lock is taken first, so no call is inside
    // it; each attempt gives up after 100 ms and releases both locks (a transaction that called
    // the old function may be waiting for its lock: holding on would deadlock), then tries again,
    // until the caller's lock_timeout has passed in all: then lock_not_available, as any other
    // lock wait of the DDL transaction (init retries it, ddl-lock-wait.ts).
    // The new state starts at the old last ID (ms * 1024 + seq): its millisecond serves as the
    // first base, so the next ID is later.
    `DO $upgrade$
DECLARE
  renamed boolean := false;
  timeout text := current_setting('lock_timeout');
  deadline timestamptz := CASE WHEN current_setting('lock_timeout') IN ('0', '0ms') THEN NULL ELSE clock_timestamp() + current_setting('lock_timeout')::interval END;
BEGIN
  IF to_regclass(${literal(counter)}) IS NULL AND to_regclass(${literal(state)}) IS NOT NULL THEN
    PERFORM set_config('lock_timeout', '100ms', true);
    WHILE NOT renamed LOOP
      BEGIN
        PERFORM pg_advisory_xact_lock(${NEXT_ID_LOCK_BASE + shard});
        ALTER SEQUENCE ${state} RENAME TO ${v1State};
        renamed := true;
      EXCEPTION WHEN lock_not_available THEN
        PERFORM pg_sleep(0.01);
      END;
      IF NOT renamed AND clock_timestamp() >= deadline THEN
        RAISE EXCEPTION USING ERRCODE = 'lock_not_available',
          MESSAGE = format('upgrading next_id() of shard %s: sessions that called the old function held it for %s', ${shard}, timeout);
      END IF;
    END LOOP;
    PERFORM set_config('lock_timeout', timeout, true);
    CREATE SEQUENCE ${state} AS bigint MINVALUE -1 START WITH -1 NO CYCLE;
    PERFORM setval(${literal(state)}::regclass, last_value) FROM ${schema}.${v1State} WHERE is_called;
    DROP SEQUENCE ${schema}.${v1State};
  END IF;
END $upgrade$`,
    // -1: no ID yet.
    `CREATE SEQUENCE IF NOT EXISTS ${state} AS bigint MINVALUE -1 START WITH -1 NO CYCLE`,
    `CREATE SEQUENCE IF NOT EXISTS ${counter} AS bigint MINVALUE 0 START WITH 0 NO CYCLE`,
    `CREATE OR REPLACE FUNCTION ${schema}.next_id(OUT result bigint) LANGUAGE plpgsql VOLATILE AS $next_id$
DECLARE
  our_epoch CONSTANT bigint := ${epoch};
  shard_id CONSTANT bigint := ${shard};
  shard_bits CONSTANT bigint := ${shard} << 10;
  max_backwards CONSTANT bigint := ${maxBackwards};
  lock_key CONSTANT bigint := ${NEXT_ID_LOCK_BASE + shard};
  base bigint;
  v bigint;
  now_ms bigint;
  jumped boolean;
BEGIN
  LOOP
    -- The order matters (docs/postgres.md): base first, then nextval.
    base := ${readBase};
    v := nextval(${counterReg});
    now_ms := ${clock};
    IF v >> 10 = base AND base = now_ms THEN
      result := (base << 23) | shard_bits | (v & 1023);
      RETURN;
    END IF;
    IF base >= 0 AND now_ms < base THEN
      -- The clock is behind the last jump: wait it out, or refuse.
      LOOP
        ${tooFarBack}
        EXIT WHEN now_ms >= base;
        now_ms := ${clock};
      END LOOP;
      IF v >> 10 = base AND now_ms = base THEN
        result := (base << 23) | shard_bits | (v & 1023);
        RETURN;
      END IF;
    END IF;
    IF base >= 0 AND now_ms = base THEN
      -- v is past base's 1024 IDs, or someone jumped since base was read: then try again.
      CONTINUE WHEN ${readBase} <> base;
      -- 1024 IDs in this millisecond: wait for the next one.
      LOOP
        now_ms := ${clock};
        ${tooFarBack}
        EXIT WHEN now_ms > base;
      END LOOP;
    END IF;
    -- now_ms > base: jump to now_ms, unless another call already has.
    -- 40 bits, not the layout's 41: a later ms would make the ID negative in a signed bigint
    -- (and past the 2^63 - 1 every table of ours stores).
    IF now_ms < 0 OR now_ms > ${MAX_MS} THEN
      RAISE EXCEPTION USING ERRCODE = '${CLOCK_RANGE_SQLSTATE}', MESSAGE = format('clock is outside the range of epoch %s (0..%s ms after it)', our_epoch, ${MAX_MS});
    END IF;
    jumped := false;
    BEGIN
      -- A transaction-level lock taken in this block's subtransaction is released when the block
      -- ends: by the RAISE below on every normal exit, by the error itself on any other.
      PERFORM pg_advisory_xact_lock(lock_key);
      IF ${readBase} < now_ms THEN
        -- Counter first, state second: a reader trusts a base only after both.
        PERFORM setval(${counterReg}, now_ms * 1024);
        PERFORM setval(${stateReg}, now_ms * 1024);
        jumped := true;
      END IF;
      RAISE EXCEPTION USING ERRCODE = '${RELEASE_SQLSTATE}';
    EXCEPTION WHEN SQLSTATE '${RELEASE_SQLSTATE}' THEN
      NULL;
    END;
    IF jumped THEN
      result := (now_ms << 23) | shard_bits;
      RETURN;
    END IF;
  END LOOP;
END
$next_id$`,
  ];
}

/**
 * The shard schemas whose generator is this one: the counter sequence came with it (both are
 * created in one transaction). Shards whose generator predates it are reinitialized by
 * `shardkit init` / `schema apply` (listShards leaves them out).
 */
export const CURRENT_GENERATOR_SQL = `SELECT n.nspname AS db FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind = 'S' AND c.relname = '${NEXT_ID_COUNTER}' AND n.nspname ~ '^db[0-9]{5}$'`;

/** An SQL string literal (of names built from validated shard numbers). */
function literal(text: string): string {
  return `'${text.replace(/'/g, "''")}'`;
}

/** Drops a shard's generator (the objects fleet leaves a schema the lookups still use). */
export function dropInstagramNextIdDdl(shard: number): string[] {
  const schema = qi(postgresSchemaName(shard));
  return [
    `DROP FUNCTION IF EXISTS ${schema}.next_id()`,
    `DROP SEQUENCE IF EXISTS ${schema}.${qi(NEXT_ID_STATE)}`,
    `DROP SEQUENCE IF EXISTS ${schema}.${qi(NEXT_ID_COUNTER)}`,
  ];
}
