import type { LimitOptions } from '../../src/http/limits.js';
import assert from 'node:assert/strict';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { buildApp, type BuildAppOptions, type RoutePlugin } from '../../src/http/app.js';
import type { ShardMap } from '../../src/topology/shard-map.js';
import { makeKit, type KitFixture } from '../kit/kit-fixture.js';

export interface AppFixture extends KitFixture {
  app: FastifyInstance;
}

export async function makeApp(options: { shardMap?: ShardMap; plugins?: RoutePlugin[]; bodyLimit?: number; limits?: LimitOptions; app?: Omit<BuildAppOptions, 'kit'> } = {}): Promise<AppFixture> {
  const f = makeKit(options.shardMap ? { shardMap: options.shardMap } : {});
  const app = await buildApp({ kit: f.kit, ...options.app, ...(options.plugins ? { plugins: options.plugins } : {}), ...(options.bodyLimit ? { bodyLimit: options.bodyLimit } : {}), ...(options.limits ? { limits: options.limits } : {}) });
  return {
    ...f,
    app,
    cleanup: async () => {
      await app.close();
      await f.cleanup();
    },
  };
}

/** A 4xx answer with the error body and a stable code, and no stack trace anywhere. */
/** makeApp, listening on a free loopback port: for tests that need a real socket or a browser. */
export async function listeningApp(options: Parameters<typeof makeApp>[0] = {}): Promise<AppFixture & { port: number; base: string }> {
  const f = await makeApp(options);
  await f.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (f.app.server.address() as { port: number }).port;
  return { ...f, port, base: `http://127.0.0.1:${port}` };
}

export function assertError(res: LightMyRequestResponse, status: number, code: string, what = ''): void {
  assert.equal(res.statusCode, status, `${what}: ${res.statusCode} ${res.body.slice(0, 300)}`);
  const body = res.json() as { error?: { code?: unknown; message?: unknown } };
  assert.equal(body.error?.code, code, `${what}: ${res.body.slice(0, 300)}`);
  assert.equal(typeof body.error?.message, 'string');
  assert.deepEqual(Object.keys(body), ['error']);
  assert.doesNotMatch(res.body, /\bat .+:\d+:\d+/, 'no stack trace in the body');
}

export async function createObject(app: FastifyInstance, type: string, data: Record<string, unknown>, extra: Record<string, unknown> = {}): Promise<{ id: string; shard: number; etag: string }> {
  const res = await app.inject({ method: 'POST', url: `/v1/objects/${type}`, payload: { data, ...extra } });
  assert.equal(res.statusCode, 201, res.body);
  const body = res.json() as { id: string; shard: number };
  return { id: body.id, shard: body.shard, etag: String(res.headers.etag) };
}

/** One bad request and the answer it must get: [what, request, status, code]. */
export type BadCase = [string, InjectOptions, number, string];

/** Sends every case and returns the first line of each failed expectation (all cases run). */
export async function failedCases(app: FastifyInstance, cases: BadCase[]): Promise<string[]> {
  const failures: string[] = [];
  for (const [what, request, status, code] of cases) {
    const res = await app.inject(request);
    try {
      assertError(res, status, code, what);
    } catch (err) {
      failures.push((err as Error).message.split('\n')[0]!);
    }
  }
  return failures;
}
