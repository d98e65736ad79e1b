/**
 * Issue #33 item 6: "checked ... by generating a typed client that compiles". A well-kept generator
 * (swagger-typescript-api, fetch client) reads docs/openapi.json as shipped; the client it writes
 * type-checks under `strict` and `noUncheckedIndexedAccess`, a consumer of it compiles under the
 * strictest settings a TypeScript team uses, the same consumer with a misspelled operation, a
 * made-up error code or a number for an ID does not, and the client then talks to a real service.
 *
 * Why swagger-typescript-api and not openapi-typescript: the latter needs TypeScript 5's compiler
 * API as a peer dependency, and this project is on TypeScript 7 (no JS API); this generator ships
 * its own TypeScript, so it installs beside ours without forcing peers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { generateApi } from 'swagger-typescript-api';
import { listeningApp } from './http-fixture.js';

const repo = fileURLToPath(new URL('../../', import.meta.url));
const tsc = join(repo, 'node_modules/.bin/tsc');

const CONSUMER = `
import { Api, type HttpResponse, type Error as ApiError } from './api.js';

export interface RoundTrip { id: string; username: unknown; etag: string | null; missing: ApiError['error']['code'] | undefined }

export async function roundTrip(baseUrl: string): Promise<RoundTrip> {
  const api = new Api({ baseUrl });
  const created = await api.v1.postObjectsByType('user', { data: { username: 'ann' } });
  const id: string = created.data.id;
  const got = await api.v1.getObjectsById(id);
  let missing: ApiError['error']['code'] | undefined;
  // The next local id on the same shard: a well-formed ID of no object.
  const other = String(BigInt(id) + 1n);
  try {
    await api.v1.getObjectsById(other);
  } catch (e) {
    const answer = e as HttpResponse<unknown, ApiError>;
    if (answer.error.error.code === 'NOT_FOUND') missing = answer.error.error.code;
  }
  return { id, username: got.data.data['username'], etag: got.headers.get('etag'), missing };
}
`;

/** Each edit of the consumer a compiler must refuse, with the error it must give. */
const BROKEN: Array<[string, string, string]> = [
  ['a misspelled operation', 'api.v1.getObjectsById(id)', 'api.v1.getObjectById(id)'],
  ['an error code the service does not have', "=== 'NOT_FOUND'", "=== 'NOT_FOUNDD'"],
  ['an ID passed as a number', 'getObjectsById(other)', 'getObjectsById(Number(other))'],
  ['a create without its data', "{ data: { username: 'ann' } }", "{ username: 'ann' }"],
];

const STRICT = { strict: true, noUncheckedIndexedAccess: true, skipLibCheck: false, noEmit: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'], types: [] };

function compile(dir: string, files: string[], options: Record<string, unknown>): { ok: boolean; out: string } {
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...STRICT, ...options }, files }));
  const res = spawnSync(process.execPath, [tsc, '-p', join(dir, 'tsconfig.json')], { encoding: 'utf8' });
  return { ok: res.status === 0, out: `${res.stdout}${res.stderr}` };
}

test('a client generated from docs/openapi.json compiles under strict settings, refuses misuse, and works against the service', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-openapi-client-'));
  try {
    await generateApi({ input: join(repo, 'docs/openapi.json'), output: dir, fileName: 'api.ts', httpClientType: 'fetch', silent: true });
    const generated = readFileSync(join(dir, 'api.ts'), 'utf8');
    // The generator marks its file @ts-nocheck; the client itself must type-check without it.
    writeFileSync(join(dir, 'api-checked.ts'), generated.replace('// @ts-nocheck', ''));
    const client = compile(dir, ['api-checked.ts'], {});
    assert.ok(client.ok, `the generated client does not type-check:\n${client.out}`);
    // The error code is the enum of docs/errors.md, not a plain string.
    assert.match(generated, /"NOT_FOUND"\s*\|/);

    // A consumer under the strictest settings (the generated file keeps its own @ts-nocheck, as
    // users keep it: its template's query handling predates exactOptionalPropertyTypes).
    writeFileSync(join(dir, 'consumer.ts'), CONSUMER);
    const good = compile(dir, ['consumer.ts'], { exactOptionalPropertyTypes: true });
    assert.ok(good.ok, `the consumer does not compile:\n${good.out}`);
    for (const [what, from, to] of BROKEN) {
      assert.ok(CONSUMER.includes(from), `${what}: the edit's anchor is in the consumer`);
      writeFileSync(join(dir, 'consumer.ts'), CONSUMER.replace(from, to));
      const bad = compile(dir, ['consumer.ts'], { exactOptionalPropertyTypes: true });
      assert.equal(bad.ok, false, `${what} compiled`);
      assert.match(bad.out, /consumer\.ts\(\d+,\d+\): error TS\d+/, what);
    }
    writeFileSync(join(dir, 'consumer.ts'), CONSUMER);

    const f = await listeningApp();
    try {
      const { roundTrip } = (await import(pathToFileURL(join(dir, 'consumer.ts')).href)) as { roundTrip(base: string): Promise<{ id: string; username: unknown; etag: string | null; missing: string | undefined }> };
      const r = await roundTrip(f.base);
      assert.match(r.id, /^\d+$/);
      assert.equal(r.username, 'ann');
      assert.match(r.etag ?? '', /^(W\/)?"/);
      assert.equal(r.missing, 'NOT_FOUND');
      assert.equal((await f.kit.objects.get(BigInt(r.id)))?.data['username'], 'ann');
    } finally {
      await f.cleanup();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
