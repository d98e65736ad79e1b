import { test } from 'node:test';
import assert from 'node:assert/strict';
import { gtidsNotReached } from '../../src/storage/mysql/gtid.js';

test('gtidsNotReached keeps only the domains a slave has not reached (a domain it wrote itself is reached)', () => {
  // After a move and a planned failover: the new master replicated the old master's fence domain.
  assert.equal(gtidsNotReached('1-2-27526,1000000-1-44', '1-2-27500,1000000-1-44'), '1-2-27526');
  assert.equal(gtidsNotReached('1-2-27526,1000000-1-44', '1-2-27526,1000000-1-44'), '');
  assert.equal(gtidsNotReached('1-2-5,2-3-9', ''), '1-2-5,2-3-9');
  assert.equal(gtidsNotReached('', '1-1-1'), '');
  assert.equal(gtidsNotReached('1-2-5', '1-1-7'), '', 'a later sequence number in the domain has it (gtid_strict_mode)');
});
