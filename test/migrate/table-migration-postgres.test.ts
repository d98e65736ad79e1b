import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import pg from 'pg';
import { PostgresInstance } from '../../src/ops/postgres/postgres-instance.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import { ShardKitError } from '../../src/errors.js';
import { runTableMigration, type TableMigrationCliOptions } from '../../src/cli/actions/migrate-table.js';
import { captureIo, embeddedTarget, tempRoot } from './table-fixture.js';

// One real PostgreSQL 15 server holds the old database (`legacy`, a `pins` table whose
// updated_at a trigger moves on every update); the target is an embedded shardkit store.
let root: string;
let server: PostgresInstance;
let url: string;
const sql = (text: string, values?: unknown[]) => server.sql('legacy', text, values);

const QUERY = 'SELECT id, title, body, raw, views, price, ok, meta, day, updated_at FROM pins';

before(async () => {
  root = tempRoot('shardkit-migtable-pg-');
  server = await PostgresInstance.start({ databases: ['legacy'] });
  url = `postgres://postgres@${server.host}:${server.port}/legacy`;
  await sql(`CREATE TABLE pins (id bigserial PRIMARY KEY, title text NOT NULL, body text, raw bytea, views bigint NOT NULL DEFAULT 0,
    price numeric(10,2), ok boolean, meta jsonb, day date, updated_at timestamptz NOT NULL DEFAULT clock_timestamp())`);
  await sql('CREATE INDEX ON pins (updated_at)');
  await sql(`CREATE FUNCTION touch() RETURNS trigger AS $$ BEGIN NEW.updated_at := clock_timestamp(); RETURN NEW; END $$ LANGUAGE plpgsql`);
  await sql('CREATE TRIGGER pins_touch BEFORE UPDATE ON pins FOR EACH ROW EXECUTE FUNCTION touch()');
  await sql(`INSERT INTO pins (title, body, raw, views, price, ok, meta, day)
    SELECT 'pin ' || i || ' ✓ "q" 🎉', CASE WHEN i % 7 = 0 THEN NULL ELSE 'body ' || i END, decode('00ff' || lpad(to_hex(i % 256), 2, '0'), 'hex'),
      9007199254740993 + i, i / 4.0, i % 2 = 0, jsonb_build_object('i', i, 'tags', jsonb_build_array('a', i)), DATE '2026-01-01' + i
    FROM generate_series(1, 1200) AS i`);
});

after(async () => {
  await server?.stop().catch(() => undefined);
  rmSync(root, { recursive: true, force: true });
});

function options(to: string, extra: Partial<TableMigrationCliOptions> = {}): TableMigrationCliOptions {
  return { from: url, to, query: QUERY, type: 'pin', idColumn: 'id', changedColumn: 'updated_at', batch: 100, json: true, ...extra };
}
const migrate = (opts: TableMigrationCliOptions) => runTableMigration(opts, captureIo());

/** The oracle: each row's JSON text, built here from PostgreSQL's own text forms. */
async function expected(): Promise<Map<string, string>> {
  const rows = await sql(`SELECT id::text, title, body, encode(raw, 'base64') AS raw, views::text, price::text, ok, meta::text,
    to_char(day, 'YYYY-MM-DD') AS day, to_char(updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US') AS at FROM pins ORDER BY id`);
  const out = new Map<string, string>();
  for (const r of rows as Array<Record<string, string | boolean | null>>) {
    // PostgreSQL prints timestamptz without trailing zeros of the fraction; so does the copy.
    const at = String(r.at).replace(/\.?0+$/, '');
    out.set(String(r.id), JSON.stringify({ title: r.title, body: r.body, raw: r.raw, views: r.views, price: r.price, ok: r.ok, meta: r.meta === null ? null : JSON.parse(String(r.meta)), day: r.day, updated_at: `${at}Z` }));
  }
  return out;
}

async function assertAllCopied(to: string): Promise<void> {
  const kit = await ShardKit.open({ configPath: to });
  try {
    for (const [oldId, text] of await expected()) {
      const id = await kit.lookups.get('pin_old_id', oldId);
      assert.ok(id !== undefined, `row ${oldId} not copied`);
      assert.equal((await kit.objects.get(id)).storedText, text, `row ${oldId}`);
    }
  } finally {
    await kit.close();
  }
}

describe('shardkit migrate from a PostgreSQL table', () => {
  test('rounds under a write load, --final on a read-only database, every row byte for byte, a rerun copies nothing', async () => {
    const to = embeddedTarget(root);
    const writer = new pg.Client({ connectionString: url });
    await writer.connect();
    let running = true;
    let writes = 0;
    const load = (async () => {
      while (running) {
        if (writes % 3 === 0) await writer.query("INSERT INTO pins (title, views) VALUES ('new', $1)", [writes]);
        else await writer.query("UPDATE pins SET title = title || '+' WHERE id = $1", [1 + (writes * 37) % 1200]);
        writes++;
      }
    })();
    try {
      const first = await migrate(options(to));
      assert.ok(first.created >= 1200);
      assert.equal(first.skipped, 0, JSON.stringify(first.skips.slice(0, 3)));
      await migrate(options(to));
      await assert.rejects(migrate(options(to, { final: true })), (e: unknown) => e instanceof ShardKitError && e.code === 'PRECONDITION_FAILED');
    } finally {
      running = false;
      await load;
      await writer.end();
    }
    assert.ok(writes > 0);
    await server.sql('postgres', 'ALTER DATABASE legacy SET default_transaction_read_only = on');
    try {
      const final = await migrate(options(to, { final: true }));
      assert.equal(final.verifyCopied, 0);
      assert.match(final.readOnly ?? '', /default_transaction_read_only = on/);
      await assertAllCopied(to);
      assert.equal((await migrate(options(to))).copied, 0, 'a second run copies nothing');
    } finally {
      // From another database: sessions of legacy are read-only now, ALTER DATABASE included.
      await server.sql('postgres', 'ALTER DATABASE legacy SET default_transaction_read_only = off');
    }
  });

  test('bad input on PostgreSQL: a query without the changed column, a refused query', async () => {
    const to = embeddedTarget(root);
    await assert.rejects(migrate(options(to, { query: 'SELECT id, title FROM pins' })), /no column updated_at \(--changed-column\); it returns id, title/);
    await assert.rejects(migrate(options(to, { query: 'SELECT * FROM nowhere' })), /the source refused the query: relation "nowhere" does not exist/);
  });
});
