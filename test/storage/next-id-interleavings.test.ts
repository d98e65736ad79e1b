/**
 * A model of db00005.next_id() (src/storage/postgres/instagram-next-id.ts), step for step, run
 * under seeded random interleavings: several sessions, each sequence operation, clock reading and
 * lock operation one atomic step, the clock stepping forward and back, calls cancelled at any
 * step. It checks what docs/postgres.md proves: no (millisecond, seq) is returned twice, and a
 * session's IDs increase. With 4 IDs per millisecond instead of 1024, the counter runs past a
 * millisecond within a few steps, so the races the proof rules out come up often. The same
 * scheduler finds repeated IDs when the call reads the base after nextval (the order the proof
 * says matters), which shows the model can fail. Server-free: the PostgreSQL tests
 * (postgres-next-id.test.ts) run the real function.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';

interface World {
  /** next_id_state: last_value (-1: no jump yet). */
  state: number;
  /** next_id_counter: last_value and is_called. */
  counter: number;
  counterCalled: boolean;
  clock: number;
  lockHolder: number | undefined;
}

const MAX_BACKWARDS = 3;
const SEQ = 4; // IDs per millisecond in the model (1024 in the function)

type Outcome = { kept: [number, number] } | { error: string };
type Step = Generator<'step' | 'blocked', Outcome>;

const baseOf = (packed: number) => (packed < 0 ? -1 : Math.floor(packed / SEQ));

/** One next_id() call, one `yield` after each atomic operation on shared state. */
function* nextId(w: World, pid: number, held: { lock: boolean }, order: 'base-first' | 'nextval-first'): Step {
  const nextval = () => {
    w.counter = w.counterCalled ? w.counter + 1 : w.counter;
    w.counterCalled = true;
    return w.counter;
  };
  for (;;) {
    let base: number;
    let v: number;
    if (order === 'base-first') {
      base = baseOf(w.state);
      yield 'step';
      v = nextval();
      yield 'step';
    } else {
      v = nextval();
      yield 'step';
      base = baseOf(w.state);
      yield 'step';
    }
    let now = w.clock;
    yield 'step';
    const msOf = Math.floor(v / SEQ);
    if (msOf === base && base === now) return { kept: [base, v % SEQ] };
    if (base >= 0 && now < base) {
      for (;;) {
        if (base - now > MAX_BACKWARDS) return { error: 'SK001' };
        if (now >= base) break;
        now = w.clock;
        yield 'step';
      }
      if (msOf === base && now === base) return { kept: [base, v % SEQ] };
    }
    if (base >= 0 && now === base) {
      const again = baseOf(w.state);
      yield 'step';
      if (again !== base) continue;
      for (;;) {
        now = w.clock;
        yield 'step';
        if (base - now > MAX_BACKWARDS) return { error: 'SK001' };
        if (now > base) break;
      }
    }
    if (now < 0) return { error: 'SK002' };
    while (w.lockHolder !== undefined) yield 'blocked';
    w.lockHolder = pid;
    held.lock = true;
    yield 'step';
    let jumped = false;
    if (baseOf(w.state) < now) {
      yield 'step';
      w.counter = now * SEQ;
      w.counterCalled = true;
      yield 'step';
      w.state = now * SEQ;
      jumped = true;
    }
    yield 'step';
    w.lockHolder = undefined;
    held.lock = false;
    if (jumped) return { kept: [now, 0] };
  }
}

/** Park-Miller: the seed alone decides the schedule. */
function rng(seed: number): () => number {
  let s = seed % 2147483647 || 1;
  return () => (s = (s * 48271) % 2147483647) / 2147483647;
}

function run(seed: number, order: 'base-first' | 'nextval-first'): { duplicates: string[]; decreasing: number; kept: number } {
  const random = rng(seed);
  const w: World = { state: -1, counter: 0, counterCalled: false, clock: 10, lockHolder: undefined };
  const sessions = 2 + Math.floor(random() * 3);
  const seen = new Map<string, number>();
  const duplicates: string[] = [];
  let decreasing = 0;
  let kept = 0;
  const procs = Array.from({ length: sessions }, (_, pid) => ({ pid, call: undefined as Step | undefined, held: { lock: false }, last: -Infinity, calls: 0 }));
  for (let step = 0; step < 600; step++) {
    const r = random();
    if (r < 0.08) {
      // The clock: mostly forward, sometimes back within the tolerance, rarely far back.
      const q = random();
      w.clock += q < 0.7 ? 1 : q < 0.95 ? -1 - Math.floor(random() * MAX_BACKWARDS) : -2 * MAX_BACKWARDS;
      continue;
    }
    const p = procs[Math.floor(random() * procs.length)]!;
    if (p.call === undefined) {
      if (p.calls >= 40) continue;
      p.calls++;
      p.call = nextId(w, p.pid, p.held, order);
    }
    if (r < 0.11) {
      // A cancel (or a lost connection) between two steps: the subtransaction's lock goes with it.
      if (p.held.lock) w.lockHolder = undefined;
      p.held.lock = false;
      p.call = undefined;
      continue;
    }
    const res = p.call.next();
    if (!res.done) continue;
    p.call = undefined;
    const outcome = res.value;
    if ('error' in outcome) continue;
    const [ms, seq] = outcome.kept;
    kept++;
    const key = `${ms}.${seq}`;
    if (seen.has(key)) duplicates.push(`${key} (sessions ${seen.get(key)} and ${p.pid})`);
    seen.set(key, p.pid);
    const id = ms * SEQ + seq;
    if (id <= p.last) decreasing++;
    p.last = id;
  }
  return { duplicates, decreasing, kept };
}

test('model of next_id(): under seeded random interleavings, clock steps and cancels, no ID is returned twice and each session\'s IDs increase', () => {
  const first = Number(process.env.SEED ?? 1);
  console.log(`# seeds ${first}..${first + 2999} (SEED=n to start elsewhere)`);
  let kept = 0;
  for (let seed = first; seed < first + 3000; seed++) {
    const r = run(seed, 'base-first');
    assert.deepEqual(r.duplicates, [], `seed ${seed}`);
    assert.equal(r.decreasing, 0, `seed ${seed}: a session's ID went down`);
    kept += r.kept;
  }
  assert.ok(kept > 10_000, `${kept} IDs kept`);
});

test('model of next_id(): reading the base after nextval instead of before repeats IDs under the same schedules', () => {
  let failing = 0;
  for (let seed = 1; seed <= 3000; seed++) if (run(seed, 'nextval-first').duplicates.length > 0) failing++;
  assert.ok(failing > 0, 'the reversed order must be caught');
  console.log(`# the reversed order repeats an ID under ${failing} of 3000 schedules`);
});
