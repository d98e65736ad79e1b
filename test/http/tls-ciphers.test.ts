/**
 * Issue #34, finding 7: over TLS 1.2 the service accepted suites without forward secrecy and
 * CBC-SHA1 ones (`AES128-SHA`, Node's defaults) although docs/security.md said "no weak
 * ciphers", and sent no HSTS. Now: ECDHE with AEAD only, and Strict-Transport-Security on every
 * HTTPS answer. An RSA certificate, so the static-RSA suites are possible at all.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { HSTS } from '../../src/http/tls.js';
import { listeningApp } from './http-fixture.js';

function certificate(dir: string): { key: Buffer; cert: Buffer } {
  const res = spawnSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'key.pem', '-out', 'cert.pem', '-days', '2', '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1'], { cwd: dir, encoding: 'utf8' });
  assert.equal(res.status, 0, res.stderr);
  return { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) };
}

/** The suite the server picks when the client offers only `ciphers` over TLS 1.2; undefined when the handshake fails. */
function negotiate(port: number, ciphers: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1', ciphers, maxVersion: 'TLSv1.2', rejectUnauthorized: false }, () => {
      resolve(socket.getCipher().name);
      socket.destroy();
    });
    socket.once('error', () => resolve(undefined));
  });
}

test('TLS 1.2 offers only ECDHE + AEAD suites; every HTTPS answer carries HSTS', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'shardkit-tls-'));
  const f = await listeningApp({ app: { https: certificate(dir) } });
  try {
    for (const weak of ['AES128-SHA', 'AES256-SHA', 'AES128-GCM-SHA256', 'AES256-SHA256', 'ECDHE-RSA-AES128-SHA', 'ECDHE-RSA-AES256-SHA384']) {
      assert.equal(await negotiate(f.port, weak), undefined, `${weak} must be refused`);
    }
    for (const strong of ['ECDHE-RSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES256-GCM-SHA384', 'ECDHE-RSA-CHACHA20-POLY1305']) {
      assert.equal(await negotiate(f.port, strong), strong);
    }
    const hsts = await new Promise<string | undefined>((resolve, reject) => {
      request({ host: '127.0.0.1', port: f.port, path: '/v1/topology', rejectUnauthorized: false }, (res) => {
        res.resume();
        resolve(res.headers['strict-transport-security'] as string | undefined);
      }).once('error', reject).end();
    });
    assert.equal(hsts, HSTS);
  } finally {
    await f.cleanup();
    rmSync(dir, { recursive: true, force: true });
  }
});

test('plain HTTP sends no HSTS (browsers ignore it there, and it would claim HTTPS that is not served)', async () => {
  const f = await listeningApp();
  try {
    const res = await fetch(`${f.base}/v1/topology`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('strict-transport-security'), null);
  } finally {
    await f.cleanup();
  }
});
