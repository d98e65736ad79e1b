import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { openWideColumnService, parseWideColumnConfig, startCompactionSchedule, type Logger } from '../../src/widecolumn/index.js';
import { errorCode, openStore, tempDir, TestClock } from './helpers.js';

test('the service opens <data>/widecolumn with the config section; bad config is INVALID_CONFIG', async () => {
  const tmp = tempDir();
  try {
    const svc = await openWideColumnService({ dataDir: tmp.dir, config: { compactionIntervalSeconds: 0, limits: { maxValueBytes: 10 } } });
    try {
      assert.ok(existsSync(join(tmp.dir, 'widecolumn', 'CURRENT')));
      await svc.engine.putDataset('d');
      assert.equal(await errorCode(svc.engine.putRow('d', 'r', [{ column: 'c', value: 'more than ten bytes' }])), 'PAYLOAD_TOO_LARGE');
    } finally {
      await svc.close();
    }
    assert.equal(svc.engine.closed, true);
    for (const bad of [{ compactionIntervalSeconds: -1 }, { limits: { maxValueBytes: 'big' } }, { unknown: true }, { compactionIntervalSeconds: 10 ** 9 }]) {
      assert.equal(await errorCode(() => parseWideColumnConfig(bad)), 'INVALID_CONFIG');
    }
    assert.equal(parseWideColumnConfig(undefined).compactionIntervalSeconds, 86400, 'daily by default');
  } finally {
    tmp.cleanup();
  }
});

test('the compaction schedule runs the job again and again, and stops cleanly', async () => {
  const tmp = tempDir();
  const clock = new TestClock();
  const reports: object[] = [];
  let ran!: () => void;
  const twice = new Promise<void>((resolve) => (ran = resolve));
  const logger: Logger = {
    info(obj, msg) {
      if (msg === 'wide-column compaction done') {
        reports.push(obj);
        if (reports.length === 2) ran();
      }
    },
    warn() {},
    error() {},
  };
  const store = await openStore(tmp.dir, { clock: clock.now, logger });
  try {
    await store.putDataset('s', { maxVersions: 1 });
    await store.putRow('s', 'r', [{ column: 'c', value: '1', timestamp: 1 }, { column: 'c', value: '2', timestamp: 2 }]);
    const stop = startCompactionSchedule(store, 10, logger);
    // The schedule's timer does not keep a process alive (by design); this one does meanwhile.
    const keepAlive = setInterval(() => {}, 1000);
    await twice;
    clearInterval(keepAlive);
    await stop();
    assert.equal((reports[0] as { removedExcessVersions: number }).removedExcessVersions, 1);
    assert.equal((reports[1] as { removedExcessVersions: number }).removedExcessVersions, 0, 'the second run finds nothing left');
  } finally {
    await store.close();
    tmp.cleanup();
  }
});
