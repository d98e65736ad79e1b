import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { devClusterDown, devUp, DevCluster, type DevUpOptions } from '../../src/ops/dev-cluster.js';

/**
 * Starts a real dev cluster (MariaDB, or PostgreSQL with engine: 'postgres') in a fresh temp dir for one test file; `stop()` (call it from an
 * `after` hook) stops every server and removes the directory, also when the test failed.
 */
export async function startTestCluster(options: Omit<DevUpOptions, 'dir'> & { prefix?: string } = {}): Promise<{ cluster: DevCluster; dir: string; stop(): Promise<void> }> {
  const dir = mkdtempSync(join(tmpdir(), options.prefix ?? 'shardkit-my-'));
  let cluster: DevCluster | undefined;
  const stop = async () => {
    try {
      // The state file, read again: servers added since the start (`dev add-pair`) are stopped too.
      const c = DevCluster.open(dir) ?? cluster;
      // Either engine (--engine postgres too).
      if (c) await devClusterDown(c);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };
  try {
    cluster = (await devUp({ ...options, dir })).cluster;
  } catch (err) {
    await stop().catch(() => undefined);
    throw err;
  }
  return { cluster, dir, stop };
}
