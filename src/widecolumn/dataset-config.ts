import { z } from 'zod';
import { ShardKitError } from '../errors.js';

export const DATASET_NAME = /^[a-z][a-z0-9_]{0,62}$/;
export const MAX_VERSIONS_LIMIT = 100_000;
/** 100 years; more would overflow nothing but is surely a typo. */
export const MAX_TTL_SECONDS = 100 * 366 * 24 * 3600;

/**
 * What a client sets: `ttlSeconds` 0 means cells never expire. `latestIndex` (set at creation
 * only, default true) keeps head records of each column's newest cell and a write log (one small
 * record per put): reads of the latest versions then cost the same on deep rows.
 */
export const datasetSettingsSchema = z.object({
  maxVersions: z.number().int().min(1).max(MAX_VERSIONS_LIMIT).optional(),
  ttlSeconds: z.number().int().min(0).max(MAX_TTL_SECONDS).optional(),
  latestIndex: z.boolean().optional(),
}).strict();

export type DatasetSettings = z.infer<typeof datasetSettingsSchema>;

export interface DatasetConfig {
  name: string;
  /** Internal number used in keys; never reused. */
  id: number;
  maxVersions: number;
  ttlSeconds: number;
  /** Head records and write log kept (see datasetSettingsSchema); fixed at creation. */
  latestIndex: boolean;
  createdAt: number;
  updatedAt: number;
}

export const DEFAULT_MAX_VERSIONS = 1;
export const DEFAULT_TTL_SECONDS = 0;

const storedSchema = z.object({
  name: z.string().regex(DATASET_NAME),
  id: z.number().int().min(1).max(0xfffffffe),
  maxVersions: z.number().int().min(1).max(MAX_VERSIONS_LIMIT),
  ttlSeconds: z.number().int().min(0).max(MAX_TTL_SECONDS),
  latestIndex: z.boolean().default(true),
  createdAt: z.number().int(),
  updatedAt: z.number().int(),
});

export function checkDatasetName(name: unknown): string {
  if (typeof name !== 'string' || !DATASET_NAME.test(name)) {
    throw new ShardKitError('INVALID_ARGUMENT', `dataset name must match ${DATASET_NAME.source}, got ${JSON.stringify(String(name).slice(0, 80))}`);
  }
  return name;
}

export function parseDatasetSettings(input: unknown): DatasetSettings {
  const parsed = datasetSettingsSchema.safeParse(input ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ShardKitError('INVALID_ARGUMENT', `invalid dataset settings at ${issue.path.join('.') || '(root)'}: ${issue.message}`);
  }
  return parsed.data;
}

export function decodeStoredDataset(bytes: Buffer): DatasetConfig {
  const parsed = storedSchema.safeParse(JSON.parse(bytes.toString('utf8')));
  if (!parsed.success) throw new ShardKitError('INTERNAL', `stored dataset config is corrupt: ${parsed.error.issues[0]?.message}`);
  return parsed.data;
}

export function publicDataset(d: DatasetConfig): { name: string; maxVersions: number; ttlSeconds: number; latestIndex: boolean; createdAt: number; updatedAt: number } {
  return { name: d.name, maxVersions: d.maxVersions, ttlSeconds: d.ttlSeconds, latestIndex: d.latestIndex, createdAt: d.createdAt, updatedAt: d.updatedAt };
}
