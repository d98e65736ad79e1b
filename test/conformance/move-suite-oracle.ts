/**
 * The move suite's ledger under two services: two ShardKits on the same topology run random
 * creates, patches, deletes and reads (seeded: the seed is printed, MOVE_SUITE_SEED=<seed>
 * replays the choices) on moving and staying shards while a move runs. An in-memory oracle keeps
 * what each acknowledged write left; every read is checked against it, during the move and after
 * the switch, and at the end every object is read back through both services and every
 * acknowledged create is looked up on the master the final map names.
 *
 * Each writer works on its own objects only, one operation at a time, so the oracle is exact: an
 * acknowledged write is the object's state; SHARD_MOVING means written nowhere (the freeze's
 * contract); any other error leaves the object either way (both states allowed until the next
 * acknowledged write).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isShardKitError } from '../../src/errors.js';
import { pinterestId } from '../../src/ids/pinterest-id.js';
import type { ShardKit } from '../../src/kit/shard-kit.js';
import { newLedger } from '../failover/ledger.js';
import { direction, forgetSwitched, noneLost, suiteMove, type MoveSuiteFixture } from './move-suite.js';
import { mulberry32 } from '../../src/util/prng.js';

/** An object's state: its data, or deleted. */
type State = { n: number; w: number } | 'deleted';

interface Owned {
  id: bigint;
  /** The states the object may be in now (one, unless a write failed without saying whether it applied). */
  states: State[];
}

const same = (a: State, b: State) => (a === 'deleted' || b === 'deleted' ? a === b : a.n === b.n && a.w === b.w);

export function oracleScenario(fx: () => MoveSuiteFixture): void {
  test('the ledger under two services: random creates, patches, deletes and reads through a move (seeded), 0 acknowledged writes lost, every read matches the oracle, after the switch too', async () => {
    const f = fx();
    await forgetSwitched(f);
    const { span, load } = f.ranges.moverDies;
    const { to } = await direction(f, span);
    const seed = process.env.MOVE_SUITE_SEED !== undefined ? Number(process.env.MOVE_SUITE_SEED) : Math.floor(Math.random() * 2 ** 31);
    console.log(`# move suite oracle: seed ${seed} (replay the choices with MOVE_SUITE_SEED=${seed})`);
    const ledger = newLedger();
    const mismatches: string[] = [];
    let switchedAt: number | undefined;
    let readsAfterSwitch = 0;
    let stop = false;
    const moving = (id: bigint) => {
      const s = pinterestId.decode(id).shard;
      return s >= span[0] && s <= span[1];
    };
    const countError = (err: unknown) => {
      const code = isShardKitError(err) ? err.code : (err as Error).message;
      ledger.errors.set(code, (ledger.errors.get(code) ?? 0) + 1);
    };
    const check = (o: Owned, seen: State, kit: number, when: string) => {
      if (!o.states.some((s) => same(s, seen))) mismatches.push(`seed ${seed}: service ${kit} read ${o.id} as ${JSON.stringify(seen)} ${when}, the oracle has ${JSON.stringify(o.states)}`);
    };
    const readState = async (kit: ShardKit, id: bigint): Promise<State> => {
      try {
        const d = (await kit.objects.get(id)).data as { n: number; w: number };
        return { n: d.n, w: d.w };
      } catch (err) {
        if (isShardKitError(err, 'NOT_FOUND')) return 'deleted';
        throw err;
      }
    };

    const writer = async (kit: ShardKit, k: number, w: number) => {
      const random = mulberry32(seed + w);
      const rnd = (n: number) => Math.floor(random() * n);
      const own: Owned[] = [];
      let step = 0;
      while (!stop) {
        step++;
        const op = own.length === 0 ? 0 : rnd(10);
        const o = own[rnd(Math.max(own.length, 1))];
        const live = o !== undefined && o.states.some((x) => x !== 'deleted');
        const next: State = { n: step, w };
        // What this step wrote to the oracle before its answer (taken back if it was written nowhere).
        let pending = false;
        try {
          if (op < 4) {
            const shard = load[rnd(load.length)]!;
            const created = await kit.objects.create('pin', next, { shard });
            own.push({ id: created.id, states: [next] });
            ledger.acked.push({ id: created.id, at: Date.now() });
          } else if (op < 7 && live) {
            o.states = [...o.states, next];
            pending = true;
            await kit.objects.patch(o.id, next);
            o.states = [next];
          } else if (op < 8 && live) {
            o.states = [...o.states, 'deleted'];
            pending = true;
            await kit.objects.delete(o.id);
            o.states = ['deleted'];
          } else {
            const afterSwitch = switchedAt !== undefined;
            check(o!, await readState(kit, o!.id), k, afterSwitch ? 'after the switch' : 'before the switch');
            if (afterSwitch && moving(o!.id)) readsAfterSwitch++;
          }
        } catch (err) {
          countError(err);
          // Held past the freeze's budget: written nowhere, the previous states stand.
          if (pending && isShardKitError(err, 'SHARD_MOVING')) o!.states = o!.states.slice(0, -1);
          await new Promise((r) => setTimeout(r, 10));
        }
        // An embedded backend answers without I/O: yield, so timers (the test's own waits) still run.
        await new Promise((r) => setImmediate(r));
      }
      return own;
    };
    const writers = f.kits.flatMap((kit, k) => [0, 1].map((i) => writer(kit, k, k * 2 + i)));
    const waitFor = async (what: string, cond: () => boolean) => {
      const deadline = Date.now() + 120_000;
      while (!cond()) {
        if (Date.now() > deadline) throw new Error(`seed ${seed}: ${what} not within 120 s (errors ${JSON.stringify([...ledger.errors])})`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    let owned: Owned[] = [];
    try {
      await waitFor('a create acknowledged on every loaded shard', () => load.every((s) => ledger.acked.some((a) => pinterestId.decode(a.id).shard === s)));
      const result = await suiteMove(f, {
        start: { span: { first: span[0], last: span[1] }, target: to, holdMs: 30_000 },
        onEvent: (e) => {
          if (e.phase === 'switched') switchedAt = Date.now();
        },
      });
      assert.equal(result.outcome, 'switched');
      assert.deepEqual(result.verify?.mismatches, []);
      await waitFor('reads of moved objects after the switch', () => readsAfterSwitch >= 20);
      await waitFor('creates on the moved shards after the switch', () => ledger.acked.filter((a) => a.at > switchedAt! && moving(a.id)).length >= 10);
    } finally {
      stop = true;
      owned = (await Promise.all(writers)).flat();
    }
    assert.deepEqual(mismatches.slice(0, 10), [], `${mismatches.length} reads differ from the oracle`);
    // Every object, read back through both services, is as the oracle says.
    for (const [k, kit] of f.kits.entries()) for (const o of owned) check(o, await readState(kit, o.id), k, 'at the end');
    assert.deepEqual(mismatches.slice(0, 10), [], `${mismatches.length} final reads differ from the oracle`);
    const ops = owned.length;
    console.log(`# seed ${seed}: ${ops} objects (${owned.filter((o) => moving(o.id)).length} on moving shards), ${readsAfterSwitch} reads of moved objects after the switch, all as the oracle says`);
    await noneLost(f, ledger, `oracle (seed ${seed})`);
  });
}
