import { ShardKitError } from '../../errors.js';
import { createProgress, type Progress } from '../../ops/progress.js';
import { mulberry32 } from '../../util/prng.js';

export interface SeedOptions {
  url: string;
  users: number;
  concurrency: number;
  seed: number;
}

interface Created {
  id: string;
}

const WORDS = ['sourdough', 'ceramics', 'hiking', 'typography', 'aquarium', 'bonsai', 'synthwave', 'origami', 'espresso', 'woodwork', 'knitting', 'astronomy'];

/** Talks to a running service; every non-2xx answer stops the seed with its error code. */
class Client {
  constructor(private readonly base: string) {}

  async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response;
    try {
      res = await fetch(this.base + path, {
        method,
        ...(body !== undefined ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {}),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new ShardKitError('SHARD_UNAVAILABLE', `cannot reach ${this.base}: ${cause} (is \`shardkit serve\` running?)`);
    }
    const text = await res.text();
    if (!res.ok) {
      let code = `HTTP ${res.status}`;
      try {
        const e = JSON.parse(text) as { error?: { code?: string; message?: string } };
        code = `${e.error?.code ?? code}: ${e.error?.message ?? ''}`;
      } catch {
        // not our error body
      }
      throw new ShardKitError('INTERNAL', `${method} ${path} failed: ${code}`);
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}

async function pool<T>(items: T[], concurrency: number, fn: (item: T) => Promise<void>, progress: Progress, done: { n: number }): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) {
      const item = items[next++]!;
      await fn(item);
      progress.update(++done.n);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

/** Fills a Pinterest-like graph through the HTTP API: users, boards, pins, likes, follows. */
export async function seedDemo(options: SeedOptions): Promise<{ users: string[]; boards: string[]; pins: string[]; requests: number }> {
  const http = new Client(options.url.replace(/\/+$/, ''));
  const rand = mulberry32(options.seed);
  const pick = <T>(list: T[]): T => list[Math.floor(rand() * list.length)]!;
  const boardsPerUser = 3;
  const pinsPerBoard = 8;
  const likesPerUser = 10;
  const followsPerUser = Math.min(5, options.users - 1);
  const n = options.users;
  const total = n * 3 + n * boardsPerUser * 2 + n * boardsPerUser * pinsPerBoard * 3 + n * likesPerUser * 2 + n * followsPerUser;
  await http.call('GET', '/healthz');
  const progress = createProgress('demo seed', total);
  const done = { n: 0 };
  const users: string[] = [];
  const boards: Array<{ id: string; user: string }> = [];
  const pins: string[] = [];
  const tag = Math.floor(rand() * 1e6).toString(36);
  const c = options.concurrency;

  await pool(Array.from({ length: n }, (_, i) => i), c, async (i) => {
    const username = `user${i}_${tag}`;
    const u = await http.call<Created>('POST', '/v1/objects/user', { data: { username, name: `User ${i}`, interests: [pick(WORDS), pick(WORDS)] } });
    users[i] = u.id;
    await http.call('PUT', `/v1/lookups/username/${encodeURIComponent(username)}`, { id: u.id });
    done.n++;
    await http.call('PUT', `/v1/lookups/email/${encodeURIComponent(`${username}@example.com`)}`, { id: u.id });
    done.n++;
  }, progress, done);

  await pool(users.flatMap((user) => Array.from({ length: boardsPerUser }, (_, k) => ({ user, k }))), c, async ({ user, k }) => {
    const b = await http.call<Created>('POST', '/v1/objects/board', { data: { name: `${pick(WORDS)} ideas ${k + 1}`, owner_id: user }, near: user });
    boards.push({ id: b.id, user });
    await http.call('PUT', `/v1/mappings/user_has_boards/${user}/${b.id}`, {});
    done.n++;
  }, progress, done);

  let sequence = Date.now();
  await pool(boards.flatMap((board) => Array.from({ length: pinsPerBoard }, (_, k) => ({ board, k }))), c, async ({ board, k }) => {
    const p = await http.call<Created>('POST', '/v1/objects/pin', {
      data: { details: `${pick(WORDS)} #${k + 1}`, link: `https://example.com/${pick(WORDS)}/${k}`, board_id: board.id, user_id: board.user },
      near: board.id,
    });
    pins.push(p.id);
    await http.call('PUT', `/v1/mappings/board_has_pins/${board.id}/${p.id}`, { sequence: sequence++ });
    done.n++;
    await http.call('PUT', `/v1/mappings/pin_owned_by_board/${p.id}/${board.id}`, {});
    done.n++;
  }, progress, done);

  await pool(users.flatMap((user) => Array.from({ length: likesPerUser }, () => ({ user, pin: pick(pins) }))), c, async ({ user, pin }) => {
    await http.call('PUT', `/v1/mappings/user_likes_pins/${user}/${pin}`, {});
    done.n++;
    await http.call('PUT', `/v1/mappings/pin_liked_by_user/${pin}/${user}`, {});
  }, progress, done);

  await pool(users.flatMap((user, i) => Array.from({ length: followsPerUser }, (_, k) => ({ user, other: users[(i + 1 + k * 7) % n]! }))).filter((f) => f.user !== f.other), c, async ({ user, other }) => {
    await http.call('PUT', `/v1/mappings/user_follows_user/${user}/${other}`, {});
  }, progress, done);

  progress.finish({ users: users.length, boards: boards.length, pins: pins.length });
  return { users, boards: boards.map((b) => b.id), pins, requests: done.n };
}

/** `demo seed`: seeds, then prints a summary and a request to try. */
export async function demoSeedCommand(opts: SeedOptions): Promise<void> {
  const result = await seedDemo(opts);
  const user = result.users[0]!;
  const board = result.boards[0]!;
  process.stdout.write(`${JSON.stringify({ users: result.users.length, boards: result.boards.length, pins: result.pins.length, exampleUser: user, exampleBoard: board })}\n`);
  process.stdout.write(`try: curl -s '${opts.url}/v1/mappings/board_has_pins/${board}/objects?limit=3'\n`);
}
