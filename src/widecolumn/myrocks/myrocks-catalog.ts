import { ShardKitError } from '../../errors.js';
import { checkDatasetName, DEFAULT_MAX_VERSIONS, DEFAULT_TTL_SECONDS, parseDatasetSettings, type DatasetConfig, type DatasetSettings } from '../dataset-config.js';
import { catalogTable } from './myrocks-ddl.js';
import type { SqlValue } from '../../storage/mysql/index.js';

interface CatalogRow {
  name: string;
  id: number | string;
  max_versions: number | string;
  ttl_seconds: number | string;
  latest_index: number | string;
  created_at: number | string;
  updated_at: number | string;
  ready: number | string;
}

type Query = <T>(sql: string, values?: SqlValue[]) => Promise<T>;

function toConfig(r: CatalogRow): DatasetConfig {
  return {
    name: r.name,
    id: Number(r.id),
    maxVersions: Number(r.max_versions),
    ttlSeconds: Number(r.ttl_seconds),
    latestIndex: Number(r.latest_index) === 1,
    createdAt: Number(r.created_at),
    updatedAt: Number(r.updated_at),
  };
}

/**
 * The dataset catalogue in MariaDB (`wc00000`.`_catalog`), so that every service on the fleet
 * agrees on the datasets and their settings. Each service keeps a copy that it reloads when it is
 * older than `refreshMs` or when a name is not in it. A dataset is listed once `ready`: its table
 * exists on every shard.
 */
export class MyrocksCatalog {
  private cache = new Map<string, DatasetConfig>();
  private loadedAt = -Infinity;
  private loading: Promise<void> | null = null;

  constructor(private readonly query: Query, private readonly refreshMs: number) {}

  private async reload(): Promise<void> {
    if (!this.loading) {
      this.loading = (async () => {
        const rows = await this.query<CatalogRow[]>(`SELECT * FROM ${catalogTable()} WHERE ready = 1`);
        this.cache = new Map(rows.map((r) => [r.name, toConfig(r)]));
        this.loadedAt = Date.now();
      })().finally(() => {
        this.loading = null;
      });
    }
    return this.loading;
  }

  async list(): Promise<DatasetConfig[]> {
    await this.reload();
    return [...this.cache.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)).map((d) => ({ ...d }));
  }

  /** The dataset's settings, UNKNOWN_DATASET when there is none (or the name is invalid: same refusal as the embedded engine). */
  async get(name: string): Promise<DatasetConfig> {
    if (typeof name !== 'string') throw new ShardKitError('INVALID_ARGUMENT', 'dataset name must be a string');
    if (Date.now() - this.loadedAt > this.refreshMs || !this.cache.has(name)) {
      checkDatasetName(name);
      try {
        await this.reload();
      } catch (err) {
        // The catalogue's host (shard 0's master) is down: datasets already known keep working
        // on the other hosts with the settings last read.
        if (!this.cache.has(name)) throw err;
      }
    }
    const d = this.cache.get(name);
    if (!d) throw new ShardKitError('UNKNOWN_DATASET', `no wide-column dataset named ${name}`);
    return d;
  }

  /**
   * Creates the dataset (its tables through `createTables`, then the catalogue row becomes ready)
   * or changes its settings. Idempotent: a creation interrupted half-way is finished by the next.
   */
  async put(name: string, settings: DatasetSettings, now: number, createTables: () => Promise<void>): Promise<{ dataset: DatasetConfig; created: boolean }> {
    checkDatasetName(name);
    const s = parseDatasetSettings(settings);
    const [existing] = await this.query<CatalogRow[]>(`SELECT * FROM ${catalogTable()} WHERE name = ?`, [name]);
    if (existing && Number(existing.ready) === 1) {
      const cur = toConfig(existing);
      if (s.latestIndex !== undefined && s.latestIndex !== cur.latestIndex) {
        throw new ShardKitError('INVALID_ARGUMENT', `latestIndex of dataset ${name} is fixed when it is created (it is ${cur.latestIndex})`);
      }
      const next = { ...cur, maxVersions: s.maxVersions ?? cur.maxVersions, ttlSeconds: s.ttlSeconds ?? cur.ttlSeconds, updatedAt: now };
      await this.query(`UPDATE ${catalogTable()} SET max_versions = ?, ttl_seconds = ?, updated_at = ? WHERE name = ?`, [next.maxVersions, next.ttlSeconds, now, name]);
      this.cache.set(name, next);
      return { dataset: { ...next }, created: false };
    }
    if (!existing) {
      await this.query(
        `INSERT IGNORE INTO ${catalogTable()} (name, id, max_versions, ttl_seconds, latest_index, created_at, updated_at, ready)
         SELECT ?, COALESCE(MAX(id), 0) + 1, ?, ?, ?, ?, ?, 0 FROM ${catalogTable()}`,
        [name, s.maxVersions ?? DEFAULT_MAX_VERSIONS, s.ttlSeconds ?? DEFAULT_TTL_SECONDS, s.latestIndex === false ? 0 : 1, now, now],
      );
    } else {
      await this.query(`UPDATE ${catalogTable()} SET max_versions = ?, ttl_seconds = ?, updated_at = ? WHERE name = ?`, [
        s.maxVersions ?? Number(existing.max_versions), s.ttlSeconds ?? Number(existing.ttl_seconds), now, name]);
    }
    await createTables();
    await this.query(`UPDATE ${catalogTable()} SET ready = 1 WHERE name = ?`, [name]);
    const [row] = await this.query<CatalogRow[]>(`SELECT * FROM ${catalogTable()} WHERE name = ?`, [name]);
    const d = toConfig(row!);
    this.cache.set(name, d);
    return { dataset: { ...d }, created: true };
  }

  /** Restore: puts back a dataset exactly as it was backed up, not ready until `ready` is called. */
  async restoreDataset(d: DatasetConfig): Promise<void> {
    await this.query(
      `INSERT INTO ${catalogTable()} (name, id, max_versions, ttl_seconds, latest_index, created_at, updated_at, ready) VALUES (?, ?, ?, ?, ?, ?, ?, 0)`,
      [checkDatasetName(d.name), d.id, d.maxVersions, d.ttlSeconds, d.latestIndex ? 1 : 0, d.createdAt, d.updatedAt],
    );
  }

  async markReady(name: string): Promise<void> {
    await this.query(`UPDATE ${catalogTable()} SET ready = 1 WHERE name = ?`, [name]);
    this.loadedAt = -Infinity;
  }

  /** Every catalogue row, ready or not (restore refuses a fleet that has any). */
  async count(): Promise<number> {
    const [r] = await this.query<Array<{ n: string | number }>>(`SELECT COUNT(*) AS n FROM ${catalogTable()}`);
    return Number(r?.n ?? 0);
  }
}
