import { timedStep, type OnStep } from '../step-timer.js';
import { q, type Conn, type ShardDatabase } from './names.js';

/** AUTO_INCREMENT of each `db.table` (information_schema, one query; undefined for a table without one). */
export async function autoIncrements(c: Conn, names: readonly string[]): Promise<Map<string, bigint | undefined>> {
  const all = await autoIncrementsIn(c, [...new Set(names.map((n) => n.slice(0, n.indexOf('.'))))]);
  return new Map(names.filter((n) => all.has(n)).map((n) => [n, all.get(n)]));
}

/** AUTO_INCREMENT of every table of `dbs`, keyed `db.table`. */
export async function autoIncrementsIn(c: Conn, dbs: readonly string[]): Promise<Map<string, bigint | undefined>> {
  if (dbs.length === 0) return new Map();
  // One branch per database: `TABLE_SCHEMA = ?` lets the server open only that database's tables
  // (an IN list over all of them made it open every table of the host: 0.1-0.6 s under the freeze).
  const [rows] = await c.query(dbs.map(() => 'SELECT TABLE_SCHEMA AS d, TABLE_NAME AS t, AUTO_INCREMENT AS n FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?').join(' UNION ALL '), [...dbs]);
  return new Map((rows as Array<{ d: string; t: string; n: string | number | null }>).map((r) => [`${r.d}.${r.t}`, r.n === null ? undefined : BigInt(r.n)]));
}

/** Target AUTO_INCREMENT at least the source's, so ids made on the target continue past every id the source gave out. */
export async function autoIncrementPast(onStep: OnStep | undefined, raised: Map<string, bigint> | undefined, sourceCounters: Promise<Map<string, bigint | undefined>>, dst: Conn, fenced: Array<ShardDatabase & { tables: string[] }>, sourceLive: boolean): Promise<void> {
  const names = fenced.flatMap((x) => x.tables.map((t) => ({ live: x.live, moved: sourceLive ? x.live : x.moved, t })));
  if (names.length === 0) return;
  // beforeFreeze raised the target's counters by a margin, and counters never go down: normally
  // this only reads the source's. A resumed mover (nothing remembered) reads the target's too.
  const [want, have] = await timedStep(onStep, 'auto-increment: counters (wait)', () => Promise.all([
    sourceCounters,
    raised ?? autoIncrements(dst, names.map((x) => `${x.live}.${x.t}`)),
  ]));
  let altered = 0;
  await timedStep(onStep, 'auto-increment: ALTER TABLE (target)', async () => {
    for (const { live, moved, t } of names) {
      const w = want.get(`${moved}.${t}`);
      const h = have.get(`${live}.${t}`);
      if (w !== undefined && (h === undefined || h < w)) {
        await dst.query(`ALTER TABLE ${q(live)}.${q(t)} AUTO_INCREMENT = ${w}`);
        altered++;
      }
    }
  });
  onStep?.('auto-increment: tables altered (count)', altered);
}
