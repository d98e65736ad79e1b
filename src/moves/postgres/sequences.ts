import type { Client } from './engine-base.js';

/** A row of SEQUENCES_SQL: schema, sequence, last value as text (null: never used). */
export interface SequenceRow {
  ns: string;
  seq: string;
  last: string | null;
}

/** Every sequence of the schemas in $1 (text[]) with its last value (null when never used). */
export const SEQUENCES_SQL = `SELECT n.nspname AS ns, c.relname AS seq, pg_sequence_last_value(c.oid)::text AS last
  FROM pg_namespace n JOIN pg_class c ON c.relnamespace = n.oid AND c.relkind = 'S' WHERE n.nspname = ANY($1::text[])`;

/**
 * The used sequences of `schemas` (`dbNNNNN.seq` -> last value; a dbNNNNN_moved schema's count
 * as dbNNNNN's, where the fence moved them).
 */
export async function readSequences(c: Client, schemas: string[], unused: true): Promise<Map<string, bigint | undefined>>;
export async function readSequences(c: Client, schemas: string[]): Promise<Map<string, bigint>>;
export async function readSequences(c: Client, schemas: string[], unused = false): Promise<Map<string, bigint | undefined>> {
  // Not the pg_sequences view: its plan filters pg_namespace once per sequence of the server
  // (tens of ms on a source with many shards, under the freeze).
  const { rows } = await c.query<SequenceRow>(SEQUENCES_SQL, [schemas]);
  const out = new Map<string, bigint | undefined>();
  for (const r of rows) {
    if (r.last === null) {
      if (unused) out.set(`${r.ns}.${r.seq}`, undefined);
      continue; // never used
    }
    const ns = r.ns.endsWith('_moved') ? r.ns.slice(0, -'_moved'.length) : r.ns;
    const key = `${ns}.${r.seq}`;
    const v = BigInt(r.last);
    if ((out.get(key) ?? -1n) < v) out.set(key, v);
  }
  return out;
}
