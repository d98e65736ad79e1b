/**
 * What a hostile or careless command line gets when Node itself refuses it (a port in use, a
 * path that is a file, a directory or missing, a host that does not resolve, a URL or PEM file
 * that does not parse, a log level pino does not know): one `shardkit: CODE: message` line
 * naming the argument or path, exit 2, as for any other bad input (docs/errors.md). Before, these
 * leaked Node's own text as `shardkit: error: ...` with exit 1.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ShardKitError } from '../../src/errors.js';
import { fromNodeError } from '../../src/cli/run-action.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';

before(ensureBuilt);

async function inTempDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-bad-input-'));
  try {
    await fn(dir);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function listening(): Promise<{ server: Server; port: number }> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return { server, port: (server.address() as { port: number }).port };
}

const esc = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('serve on a port already in use: ALREADY_EXISTS naming the address, exit 2', async () => {
  await inTempDir(async (dir) => {
    const { server, port } = await listening();
    try {
      const r = await cli(['serve', '--data', dir, '--port', String(port), '--host', '127.0.0.1', '--no-widecolumn', '--log-level', 'warn']);
      assertBadInput(r, 'port in use', new RegExp(`^shardkit: ALREADY_EXISTS: cannot listen on 127\\.0\\.0\\.1:${port}: the port is already in use`));
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

test('serve --host that does not resolve, or is not an address of this machine: INVALID_ARGUMENT, exit 2', async () => {
  await inTempDir(async (dir) => {
    const base = ['serve', '--data', dir, '--port', '0', '--no-widecolumn', '--log-level', 'warn'];
    assertBadInput(await cli([...base, '--host', '999.1.1.1']), '--host 999.1.1.1', /^shardkit: INVALID_ARGUMENT: cannot resolve the host name 999\.1\.1\.1: no such host$/);
    // 192.0.2.0/24 is TEST-NET-1 (RFC 5737): on no machine's interfaces.
    assertBadInput(await cli([...base, '--host', '192.0.2.1']), '--host 192.0.2.1', /^shardkit: INVALID_ARGUMENT: cannot listen on 192\.0\.2\.1: not an address of this machine$/);
  });
});

test('serve --log-level bogus: INVALID_ARGUMENT naming the levels, before anything is written', async () => {
  await inTempDir(async (dir) => {
    const r = await cli(['serve', '--data', dir, '--port', '0', '--no-widecolumn', '--log-level', 'bogus']);
    assertBadInput(r, '--log-level bogus', /^shardkit: INVALID_ARGUMENT: --log-level must be one of fatal, error, warn, info, debug, trace, silent, got "bogus"$/);
    assert.equal(existsSync(join(dir, 'shardkit.json')), false, 'no config written');
  });
});

test('serve --data naming a file: INVALID_ARGUMENT naming the path, exit 2', async () => {
  await inTempDir(async (dir) => {
    const file = join(dir, 'not-a-dir');
    writeFileSync(file, 'x');
    const r = await cli(['serve', '--data', file, '--port', '0', '--no-widecolumn', '--log-level', 'warn']);
    assertBadInput(r, '--data <file>', new RegExp(`^shardkit: INVALID_ARGUMENT: cannot create the directory ${esc(file)}: it exists and is not a directory$`));
  });
});

test('serve --tls-cert/--tls-key that are not PEM: INVALID_ARGUMENT naming the file, before the shards open', async () => {
  await inTempDir(async (dir) => {
    const junk = join(dir, 'passwd');
    writeFileSync(junk, 'root:x:0:0:root:/root:/bin/bash\n');
    const data = join(dir, 'data');
    const r = await cli(['serve', '--data', data, '--port', '0', '--no-widecolumn', '--log-level', 'warn', '--tls-cert', junk, '--tls-key', junk]);
    assertBadInput(r, 'junk TLS files', new RegExp(`^shardkit: INVALID_ARGUMENT: --tls-cert ${esc(junk)} is not a PEM certificate \\(no start line\\)$`));
    assert.equal(existsSync(data), false, 'the data dir was not created');
  });
});

test('--url that is not an http(s) URL: INVALID_ARGUMENT, exit 2 (wc and demo seed)', async () => {
  const pattern = /^shardkit: INVALID_ARGUMENT: --url must be an http:\/\/ or https:\/\/ URL such as http:\/\/127\.0\.0\.1:7070, got "(garbage|localhost:7070)"$/;
  assertBadInput(await cli(['wc', 'datasets', '--url', 'garbage']), 'wc datasets --url garbage', pattern);
  assertBadInput(await cli(['wc', 'compact', '--url', 'localhost:7070']), 'wc compact --url localhost:7070', pattern);
  assertBadInput(await cli(['demo', 'seed', '--url', 'garbage']), 'demo seed --url garbage', pattern);
});

test('a file to write in a missing directory, or at a directory: NOT_FOUND / INVALID_ARGUMENT naming the path, exit 2', async () => {
  await inTempDir(async (dir) => {
    const tok = join(dir, 'nonexistent', 'tok');
    assertBadInput(await cli(['auth', 'token', '--scope', 'read', '--file', tok]), 'auth token --file <missing dir>', new RegExp(`^shardkit: NOT_FOUND: cannot open ${esc(tok)}: no such file or directory$`));
    const out = join(dir, 'nonexistent', 'x.json');
    assertBadInput(await cli(['openapi', '--out', out]), 'openapi --out <missing dir>', new RegExp(`^shardkit: NOT_FOUND: cannot open ${esc(out)}: no such file or directory$`));
    assertBadInput(await cli(['openapi', '--out', dir]), 'openapi --out <dir>', new RegExp(`^shardkit: INVALID_ARGUMENT: cannot open ${esc(dir)}: it is a directory$`));
  });
});

test('a service that does not answer is one coded line and exit 1: retry, not fix the command', async () => {
  const { server, port } = await listening();
  await new Promise((resolve) => server.close(resolve));
  const r = await cli(['wc', 'datasets', '--url', `http://127.0.0.1:${port}`]);
  assert.equal(r.code, 1, r.stderr);
  assert.match(r.stderr, new RegExp(`^shardkit: SHARD_UNAVAILABLE: cannot reach the service at http://127\\.0\\.0\\.1:${port}: .*\\n$`));
});

test('a fleet server that does not answer (refused port, gone socket) is SHARD_UNAVAILABLE naming it, not an untyped connect error', async () => {
  const { server, port } = await listening();
  await new Promise((resolve) => server.close(resolve));
  const refused = await new Promise<Error>((resolve) => connect(port, '127.0.0.1').on('error', resolve));
  assert.deepEqual(fromNodeError(refused)?.toJSON(), { code: 'SHARD_UNAVAILABLE', message: `cannot reach the server at 127.0.0.1:${port} (ECONNREFUSED): is it running?` });
  const gone = await new Promise<Error>((resolve) => connect('/nonexistent/mysqld.sock').on('error', resolve));
  assert.deepEqual(fromNodeError(gone)?.toJSON(), { code: 'SHARD_UNAVAILABLE', message: 'cannot reach the server at /nonexistent/mysqld.sock (ENOENT): is it running?' });
});

test('Node errors from TLS and URL parsing are typed as bad input; others stay unexpected failures', () => {
  const ossl = Object.assign(new Error('error:0480006C:PEM routines::no start line'), { code: 'ERR_OSSL_PEM_NO_START_LINE', reason: 'no start line' });
  assert.deepEqual(fromNodeError(ossl)?.toJSON(), { code: 'INVALID_ARGUMENT', message: 'a TLS certificate or key cannot be used: no start line' });
  let invalidUrl: unknown;
  try {
    new URL('garbage');
  } catch (err) {
    invalidUrl = err;
  }
  assert.deepEqual(fromNodeError(invalidUrl)?.toJSON(), { code: 'INVALID_ARGUMENT', message: 'not a valid URL: "garbage"' });
  const noSpace = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC', syscall: 'write', path: '/data/x' });
  assert.equal(fromNodeError(noSpace), undefined, 'a full disk is not bad input');
  const noProgram = Object.assign(new Error('spawn mariadbd ENOENT'), { code: 'ENOENT', syscall: 'spawn mariadbd', path: 'mariadbd' });
  assert.equal(fromNodeError(noProgram), undefined, 'a missing program is not a missing file the user named');
  const typed = new ShardKitError('NOT_FOUND', 'kept as is');
  assert.equal(fromNodeError(typed), undefined);
});
