/**
 * db00005.next_id() (src/storage/postgres/instagram-next-id.ts) against the seed's PL/pgSQL
 * function (nextval() % 1024 with the current millisecond) on the same PostgreSQL 15 server, in
 * the same run: IDs per second from one session and from four at once (10,000 IDs per statement),
 * and one ID per round trip through PostgresBackend.nextInstagramIds. No target: the figures show
 * what refusing duplicates (a short advisory lock per ID) costs against the seed's version, which
 * repeats IDs when the server's clock steps back or a shard makes over 1024 IDs in a millisecond.
 */
import pg from 'pg';
import { PostgresBackend } from '../src/storage/postgres/index.js';
import { DATABASE, startPostgresServers } from '../test/storage/postgres-servers.js';

const ROUNDS = 5;
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
  const statement = (fn: string) => pool.query(`SELECT db00005.${fn}() FROM generate_series(1, ${PER_STATEMENT})`);
  const rate = async (run: () => Promise<unknown>, ids: number) => {
    const t = performance.now();
    await run();
    return (ids / (performance.now() - t)) * 1000;
  };
  for (const fn of ['next_id', 'seed_next_id']) await statement(fn);
  const rows: Record<string, number[]> = { ours1: [], seed1: [], ours4: [], seed4: [], trip: [] };
  for (let r = 0; r < ROUNDS; r++) {
    rows.ours1!.push(await rate(() => statement('next_id'), PER_STATEMENT));
    rows.seed1!.push(await rate(() => statement('seed_next_id'), PER_STATEMENT));
    rows.ours4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('next_id'))), 4 * PER_STATEMENT));
    rows.seed4!.push(await rate(() => Promise.all([1, 2, 3, 4].map(() => statement('seed_next_id'))), 4 * PER_STATEMENT));
    rows.trip!.push(await rate(async () => {
      for (let i = 0; i < 300; i++) await backend.nextInstagramIds(ref, 1);
    }, 300));
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
  const k = (x: number) => `${Math.round(x / 1000).toLocaleString('en-US')}k IDs/s`;
  console.log(`next_id() vs the seed's function, ${PER_STATEMENT} IDs per statement, medians of ${ROUNDS} alternating rounds`);
  console.log(`  one session     ours ${k(median(rows.ours1!))}  seed ${k(median(rows.seed1!))}  ratio ${(median(rows.ours1!) / median(rows.seed1!)).toFixed(2)}x`);
  console.log(`  four sessions   ours ${k(median(rows.ours4!))}  seed ${k(median(rows.seed4!))}  ratio ${(median(rows.ours4!) / median(rows.seed4!)).toFixed(2)}x`);
  console.log(`  one ID per round trip (nextInstagramIds(ref, 1)): ${(1e6 / median(rows.trip!)).toFixed(0)} us each`);
} finally {
  await pool.end();
  await backend.close();
  await env.stop();
}
