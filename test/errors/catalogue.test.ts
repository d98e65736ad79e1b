import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { ERROR_CODES, ShardKitError, type ErrorCode } from '../../src/index.js';

/** Rows of the docs table: | `CODE` | status | meaning | ... */
function documentedCodes(): Map<string, number> {
  const text = readFileSync(new URL('../../docs/errors.md', import.meta.url), 'utf8');
  const rows = new Map<string, number>();
  for (const m of text.matchAll(/^\|\s*`([A-Z_]+)`\s*\|\s*(\d{3})\s*\|\s*([^|]*?)\s*\|/gm)) {
    assert.ok(!rows.has(m[1]!), `${m[1]} is documented twice`);
    assert.ok(m[3]!.length > 10, `${m[1]} has no meaning in docs/errors.md`);
    rows.set(m[1]!, Number(m[2]));
  }
  return rows;
}

test('every code in ERROR_CODES is documented in docs/errors.md with its HTTP status', () => {
  const docs = documentedCodes();
  for (const [code, status] of Object.entries(ERROR_CODES)) {
    assert.ok(docs.has(code), `${code} is missing from docs/errors.md`);
    assert.equal(docs.get(code), status, `docs/errors.md gives ${code} status ${docs.get(code)}, src/errors.ts says ${status}`);
  }
});

test('docs/errors.md documents no code that does not exist', () => {
  for (const code of documentedCodes().keys()) assert.ok(code in ERROR_CODES, `docs/errors.md documents unknown code ${code}`);
});

test('a ShardKitError carries its code\'s status; 4xx and 5xx split as the CLI exit codes assume', () => {
  for (const [code, status] of Object.entries(ERROR_CODES)) {
    const err = new ShardKitError(code as ErrorCode, 'x');
    assert.equal(err.status, status);
    assert.ok(status >= 400 && status < 600, code);
    assert.deepEqual(err.toJSON(), { code, message: 'x' });
  }
});
