import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hostsFromRecords, type HostRecord } from '../../src/topology/host-records.js';

const rec = (port: number, credentialsFrom?: string): HostRecord => ({ address: '10.0.0.1', port, role: 'master', engine: 'mariadb', ...(credentialsFrom ? { credentialsFrom } : {}) });

test('a service connects to a host record with its own credentials; its config wins; an unknown credentialsFrom stays unknown (HOST_UNKNOWN, not the wrong account)', () => {
  const config = { MySQL001A: { user: 'svc', password: 'pw' }, MySQL002A: { user: 'local' } };
  const records = new Map([['MySQL002A', rec(3307)], ['MySQL003A', rec(3308)], ['MySQL003B', rec(3309, 'MySQL001A')], ['MySQL004A', rec(3310, 'Nobody')]]);
  assert.deepEqual(hostsFromRecords(records, config), {
    MySQL003A: { host: '10.0.0.1', port: 3308 },
    MySQL003B: { host: '10.0.0.1', port: 3309, user: 'svc', password: 'pw' },
  });
});
