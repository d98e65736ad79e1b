/**
 * db00005.next_id() (src/storage/postgres/instagram-next-id.ts) against the seed's PL/pgSQL
 * function (nextval() % 1024 with the current millisecond) on the same PostgreSQL 15 server, in
 * the same run: IDs per second from one session and from four at once on one shard (10,000 IDs
 * per statement), and one ID per round trip through PostgresBackend.nextInstagramIds. Targets
 * (issue 20): at least 0.8x the seed's function with one session, 0.5x with four. Ours never
 * repeats an ID (no lock on the common path, one per jump to a new millisecond); the seed's
 * repeats IDs when the server's clock steps back or a shard makes over 1024 IDs in a millisecond.
 */
import pg from 'pg';
import { PostgresBackend } from '../src/storage/postgres/index.js';
import { instagramNextIdDdlV1 } from '../test/storage/postgres-next-id-v1.js';
import { DATABASE, startPostgresServers } from '../test/storage/postgres-servers.js';

const ROUNDS = Number(process.env.ROUNDS ?? 7);
const PER_STATEMENT = 10_000;

const env = await startPostgresServers();
const backend = new PostgresBackend({ hosts: env.hosts, storage: { user: 'postgres', database: DATABASE, poolSize: 4 }, schema: env.schema });
const pool = new pg.Pool({ host: env.hosts.PG001A!.host, port: env.hosts.PG001A!.port, user: 'postgres', database: DATABASE, max: 4 });
try {
  const ref = { host: 'PG001A', shard: 5, fleet: 'objects' as const };
  await backend.createShard(ref);
  // The seed's function, as published (with its `% 1024` restored), beside ours in the same schema.
  await pool.query(`CREATE SEQUENCE db00005.table_id_seq;
    CREATE FUNCTION db00005.seed_next_id(OUT result bigint) AS $$
    DECLARE our_epoch bigint := 1314220021721; seq_id bigint; now_millis bigint; shard_id int := 5;
    BEGIN
      SELECT nextval('db00005.table_id_seq') % 1024 INTO seq_id;
      SELECT FLOOR(EXTRACT(EPOCH FROM clock_timestamp()) * 1000) INTO now_millis;
      result := (now_millis - our_epoch) << 23;
      result := result | (shard_id << 10);
      result := result | (seq_id);
    END; $$ LANGUAGE PLPGSQL`);
  // The seed's logic with plain assignments (no executor per statement): the floor for any
  // PL/pgSQL next_id(), to show what our extra sequence read costs. Not the issue's target.
  await pool.query(`CREATE FUNCTION db00005.seed_lean_next_id(OUT result bigint) AS $$
    DECLARE our_epoch CONSTANT bigint := 1314220021721; shard_id CONSTANT bigint := 5;
    BEGIN
      result := ((floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint - our_epoch) << 23)
        | (shard_id << 10) | (nextval('db00005.table_id_seq'::regclass) % 1024);
    END; $$ LANGUAGE PLPGSQL`);
  // The function shards had before issue 20 (a session lock per call), on shard 6 of the same server.
  await backend.createShard({ ...ref, shard: 6 });
  await pool.query('DROP SEQUENCE db00006.next_id_counter');
  for (const sql of instagramNextIdDdlV1(6)) await pool.query(sql);
  const statement = (fn: string) => pool.query(`SELECT ${fn.includes('.') ? fn : `db00005.${fn}`}() FROM generate_series(1, ${PER_STATEMENT})`);
  const rate = async (run: () => Promise<unknown>, ids: number) => {
    const t = performance.now();
    await run();
    return (ids / (performance.now() - t)) * 1000;
  };
  for (const fn of ['next_id', 'seed_next_id', 'seed_lean_next_id', 'db00006.next_id']) await statement(fn);
  const rows: Record<string, number[]> = { ours1: [], seed1: [], ours4: [], seed4: [], lean1: [], lean4: [], old1: [], old4: [], trip: [] };
  for (let r = 0; r < ROUNDS; r++) {
    rows.ours1!.push(await rate(() => statement('next_id'), PER_STATEMENT));
    rows.seed1!.push(await rate(() => statement('seed_next_id'), PER_STATEMENT));
    rows.ours4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('next_id'))), 4 * PER_STATEMENT));
    rows.seed4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('seed_next_id'))), 4 * PER_STATEMENT));
    rows.lean1!.push(await rate(() => statement('seed_lean_next_id'), PER_STATEMENT));
    rows.lean4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('seed_lean_next_id'))), 4 * PER_STATEMENT));
    rows.old1!.push(await rate(() => statement('db00006.next_id'), PER_STATEMENT));
    rows.old4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('db00006.next_id'))), 4 * PER_STATEMENT));
    rows.trip!.push(await rate(async () => {
      for (let i = 0; i < 300; i++) await backend.nextInstagramIds(ref, 1);
    }, 300));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const k = (x: number) => `${Math.round(x / 1000).toLocaleString('en-US')}k IDs/s`;
  console.log(`next_id() vs the seed's function, ${PER_STATEMENT} IDs per statement, medians of ${ROUNDS} alternating rounds`);
  const ratio1 = median(rows.ours1!) / median(rows.seed1!);
  const ratio4 = median(rows.ours4!) / median(rows.seed4!);
  const verdict = (r: number, target: number) => `(target >= ${target}x: ${r >= target ? 'met' : 'NOT met'})`;
  console.log(`  one session     ours ${k(median(rows.ours1!))}  seed ${k(median(rows.seed1!))}  ratio ${ratio1.toFixed(2)}x ${verdict(ratio1, 0.8)}`);
  console.log(`  four sessions   ours ${k(median(rows.ours4!))}  seed ${k(median(rows.seed4!))}  ratio ${ratio4.toFixed(2)}x ${verdict(ratio4, 0.5)}`);
  console.log(`  the seed's logic with plain assignments: one session ${k(median(rows.lean1!))} (ours ${(median(rows.ours1!) / median(rows.lean1!)).toFixed(2)}x), four ${k(median(rows.lean4!))} (ours ${(median(rows.ours4!) / median(rows.lean4!)).toFixed(2)}x)`);
  console.log(`  before issue 20 (a session lock per call): one session ${k(median(rows.old1!))} (${(median(rows.old1!) / median(rows.seed1!)).toFixed(2)}x the seed's), four ${k(median(rows.old4!))} (${(median(rows.old4!) / median(rows.seed4!)).toFixed(2)}x)`);
  console.log(`  one ID per round trip (nextInstagramIds(ref, 1)): ${(1e6 / median(rows.trip!)).toFixed(0)} us each`);
} finally {
  await pool.end();
  await backend.close();
  await env.stop();
}
