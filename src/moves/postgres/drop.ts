import { setTimeout as sleep } from 'node:timers/promises';
import { qi, type Client } from './engine-base.js';

/** Drops a subscription and its slot on the source; when the source cannot be reached, drops it here only (the slot is dropped later by dropSlot). */
export async function dropSubscription(c: Client, name: string): Promise<void> {
  const { rows } = await c.query('SELECT 1 FROM pg_subscription WHERE subname = $1', [name]);
  if (rows.length === 0) return;
  try {
    await c.query(`DROP SUBSCRIPTION ${qi(name)}`);
  } catch {
    await c.query(`ALTER SUBSCRIPTION ${qi(name)} DISABLE`);
    await c.query(`ALTER SUBSCRIPTION ${qi(name)} SET (slot_name = NONE)`);
    await c.query(`DROP SUBSCRIPTION ${qi(name)}`);
  }
}

/** A slot left behind (its subscription dropped without reaching the source) keeps WAL forever: drop it when no one uses it. */
export async function dropSlot(c: Client, name: string): Promise<void> {
  await c.query('SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = $1 AND NOT active', [name]);
}

/**
 * A move's own slot, once its subscription is gone or was never made: a walsender still holding it
 * can only be a killed mover's copy connection (the server notices the dead client a moment
 * later), so it is ended first.
 */
export async function dropOwnSlot(c: Client, name: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await c.query<{ pid: number }>('SELECT active_pid AS pid FROM pg_replication_slots WHERE slot_name = $1 AND active_pid IS NOT NULL', [name]);
    if (rows.length === 0) break;
    await c.query('SELECT pg_terminate_backend($1)', [rows[0]!.pid]);
    await sleep(100);
  }
  await dropSlot(c, name);
}

export async function dropSchemaIfEmpty(c: Client, ns: string): Promise<void> {
  const { rows } = await c.query(
    `SELECT (SELECT count(*) FROM pg_class WHERE relnamespace = n.oid) + (SELECT count(*) FROM pg_proc WHERE pronamespace = n.oid) AS n
     FROM pg_namespace n WHERE n.nspname = $1`, [ns]);
  if (rows.length > 0 && Number((rows[0] as { n: string }).n) === 0) await c.query(`DROP SCHEMA IF EXISTS ${qi(ns)}`);
}
