/**
 * ShardKit over SQLite in a temp dir with a cache, plus a second kit on the same storage without
 * one (a writer that invalidates nothing, as another process without a cache would be) and a
 * gate to pause the cached kit's backend reads (to provoke the fill-after-invalidate race).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Cache } from '../../src/cache/index.js';
import type { ShardBackend } from '../../src/storage/shard-backend.js';
import { SqliteBackend } from '../../src/storage/sqlite/sqlite-backend.js';
import { ShardKit } from '../../src/kit/shard-kit.js';
import type { CacheErrorEvent } from '../../src/kit/types.js';
import { MemoryTopologyStore } from '../../src/topology/memory/memory-topology-store.js';
import { ShardMap } from '../../src/topology/shard-map.js';
import { testConfig, testSchema } from '../kit/kit-fixture.js';

/** Holds the next matching backend read after it has read, until released. */
export class ReadGate {
  private armed: { method: string; reached: () => void; release: Promise<void> } | undefined;

  /** Arms the gate for the next call of `method`; `reached` resolves once that call has read. */
  arm(method: 'getObjects' | 'listMappings' | 'countMappings'): { reached: Promise<void>; release: () => void } {
    let release!: () => void;
    let reached!: () => void;
    const reachedP = new Promise<void>((r) => (reached = r));
    const releaseP = new Promise<void>((r) => (release = r));
    this.armed = { method, reached, release: releaseP };
    return { reached: reachedP, release };
  }

  wrap(backend: ShardBackend): ShardBackend {
    return new Proxy(backend, {
      get: (target, prop, receiver) => {
        const value = Reflect.get(target, prop, receiver) as unknown;
        if (typeof value !== 'function') return value;
        return async (...args: unknown[]) => {
          const result = await (value as (...a: unknown[]) => Promise<unknown>).apply(target, args);
          const armed = this.armed;
          if (armed !== undefined && armed.method === prop) {
            this.armed = undefined;
            armed.reached();
            await armed.release;
          }
          return result;
        };
      },
    });
  }
}

export interface CachedKitFixture {
  kit: ShardKit;
  /** Same storage, no cache: its writes invalidate nothing. */
  plain: ShardKit;
  gate: ReadGate;
  cacheErrors: CacheErrorEvent[];
  cleanup(): Promise<void>;
}

export function makeCachedKit(cache: Cache, options: { ttlSeconds?: number; keyPrefix?: string } = {}): CachedKitFixture {
  const root = mkdtempSync(join(tmpdir(), 'shardkit-cache-kit-'));
  const backend = new SqliteBackend({ root, schema: testSchema, maxOpenShards: 8 });
  const topology = new MemoryTopologyStore();
  const shardMap = ShardMap.fromJSON(testConfig.shardMap);
  const gate = new ReadGate();
  const kit = new ShardKit({ backend: gate.wrap(backend), schema: testSchema, topology, shardMap, cache: { cache, ...options } });
  const plain = new ShardKit({ backend, schema: testSchema, topology, shardMap });
  const cacheErrors: CacheErrorEvent[] = [];
  kit.events.on('cache-error', (e: CacheErrorEvent) => cacheErrors.push(e));
  return {
    kit,
    plain,
    gate,
    cacheErrors,
    cleanup: async () => {
      await kit.close();
      await plain.close();
      await backend.close();
      await topology.close();
      rmSync(root, { recursive: true, force: true });
    },
  };
}
