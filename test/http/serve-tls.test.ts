/**
 * @integration (scripts/run-tests.mjs: in `npm test`, not `npm run test:unit`): two real
 * `shardkit serve` processes with TLS, client certificates made here with openssl, curl,
 * `shardkit auth token` and SIGHUP rotation (docs/security.md). The in-process checks of tokens,
 * scopes and limits are in security.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hashToken } from '../../src/http/auth-tokens.js';
import { CLI as BUILT_CLI, cli, ensureBuilt } from '../cli/cli-harness.js';

// The built CLI (scripts/run-tests.mjs builds first; a lone run builds here when dist/ is stale).
const CLI = [BUILT_CLI];

function openssl(dir: string, args: string[]): void {
  const res = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
  assert.equal(res.status, 0, `openssl ${args.join(' ')}: ${res.stderr}`);
}

/** A CA, a server certificate for 127.0.0.1 and a client certificate, all signed by the CA. */
function makeCertificates(dir: string): void {
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=shardkit test CA']);
  for (const [name, ext] of [['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'], ['client', 'extendedKeyUsage=clientAuth']] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
    openssl(dir, ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`]);
    openssl(dir, ['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`]);
  }
}

interface Served {
  proc: ChildProcess;
  url: string;
  output: () => string;
}

async function serve(dataDir: string, args: string[]): Promise<Served> {
  const proc = spawn(process.execPath, [...CLI, 'serve', '--data', dataDir, '--port', '0', '--no-widecolumn', '--no-dashboard', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    proc.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const m = /Server listening at (https?:\/\/127\.0\.0\.1:\d+)/.exec(out);
      if (m) resolve(m[1]!);
    });
    proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    proc.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${out}`)));
  });
  return { proc, url, output: () => out };
}

async function stop(s: Served): Promise<void> {
  if (s.proc.exitCode !== null) return;
  const exited = new Promise((resolve) => s.proc.once('exit', resolve));
  s.proc.kill('SIGTERM');
  await exited;
}

function curl(args: string[]): { status: number; exit: number | null; body: string } {
  const res = spawnSync('curl', ['-s', '-o', '-', '-w', '\n%{http_code}', ...args], { encoding: 'utf8' });
  const lines = res.stdout.split('\n');
  return { status: Number(lines.pop()), exit: res.status, body: lines.join('\n') };
}

/** Waits for `pattern` to appear in the server's output (the SIGHUP's log line). */
async function waitFor(s: Served, pattern: RegExp): Promise<void> {
  for (let i = 0; i < 1000 && !pattern.test(s.output()); i++) await new Promise((r) => setTimeout(r, 20));
  assert.match(s.output(), pattern);
}

test('serve over TLS with tokens: curl, SIGHUP rotation, `shardkit auth token`, client certificates', async (t) => {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-tls-'));
  const served: Served[] = [];
  t.after(async () => {
    for (const s of served) await stop(s);
    rmSync(dir, { recursive: true, force: true });
  });
  makeCertificates(dir);
  const tokens = join(dir, 'tokens');
  const made = await cli(['auth', 'token', '--scope', 'write', '--file', tokens]);
  assert.equal(made.code, 0, made.stderr);
  const first = made.stdout.trim();
  assert.match(first, /^sk_[A-Za-z0-9_-]{43}$/);
  const refused = await cli(['auth', 'token', '--scope', 'root', '--file', tokens]);
  assert.notEqual(refused.code, 0);
  assert.equal(refused.stderr.trim().split('\n').length, 1, refused.stderr);

  const s = await serve(join(dir, 'data'), ['--tls-cert', join(dir, 'server.pem'), '--tls-key', join(dir, 'server.key'), '--auth-file', tokens]);
  served.push(s);
  assert.match(s.url, /^https:/);
  const ca = ['--cacert', join(dir, 'ca.pem')];
  assert.equal(curl([...ca, `${s.url}/healthz`]).status, 200);
  assert.equal(curl([...ca, `${s.url}/v1/topology`]).status, 401);
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${first}`, `${s.url}/v1/topology`]).status, 200);
  const post = curl([...ca, '-X', 'POST', '-H', `authorization: Bearer ${first}`, '-H', 'content-type: application/json', '-d', '{"data":{"over":"tls"}}', `${s.url}/v1/objects/user`]);
  assert.equal(post.status, 201, post.body);
  // Without the CA, curl does not trust the server: no request is made.
  assert.notEqual(curl([`${s.url}/healthz`]).exit, 0);
  // Plain HTTP to the TLS port gets no answer of ours.
  assert.notEqual(curl([s.url.replace('https:', 'http:') + '/healthz']).status, 200);

  // Rotation: a new token works after SIGHUP; a removed one stops working.
  const second = (await cli(['auth', 'token', '--scope', 'read', '--file', tokens])).stdout.trim();
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${second}`, `${s.url}/v1/topology`]).status, 401, 'not before SIGHUP');
  s.proc.kill('SIGHUP');
  await waitFor(s, /reloaded the auth file/);
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${second}`, `${s.url}/v1/topology`]).status, 200);
  writeFileSync(tokens, readFileSync(tokens, 'utf8').split('\n').filter((l) => !l.includes(hashToken(first).toString('hex'))).join('\n'));
  s.proc.kill('SIGHUP');
  await waitFor(s, /reloaded the auth file(.|\n)*reloaded the auth file/);
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${first}`, `${s.url}/v1/topology`]).status, 401, 'revoked');
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${second}`, `${s.url}/v1/topology`]).status, 200);
  // A file that no longer parses keeps the tokens in force.
  writeFileSync(tokens, 'garbage\n');
  s.proc.kill('SIGHUP');
  await waitFor(s, /did not load/);
  assert.equal(curl([...ca, '-H', `authorization: Bearer ${second}`, `${s.url}/v1/topology`]).status, 200);

  // Client certificates: none is refused in the handshake; the CA's client certificate is let in.
  const m = await serve(join(dir, 'data2'), ['--tls-cert', join(dir, 'server.pem'), '--tls-key', join(dir, 'server.key'), '--tls-client-ca', join(dir, 'ca.pem')]);
  served.push(m);
  const without = curl([...ca, `${m.url}/healthz`]);
  assert.notEqual(without.status, 200);
  const withCert = curl([...ca, '--cert', join(dir, 'client.pem'), '--key', join(dir, 'client.key'), `${m.url}/v1/topology`]);
  assert.equal(withCert.status, 200, withCert.body);
  // A certificate the CA did not sign (the server's own key pair, self-signed here) is refused.
  openssl(dir, ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'rogue.key', '-out', 'rogue.pem', '-days', '2', '-subj', '/CN=rogue']);
  assert.notEqual(curl([...ca, '--cert', join(dir, 'rogue.pem'), '--key', join(dir, 'rogue.key'), `${m.url}/healthz`]).status, 200);
});
