import { readFileSync } from 'node:fs';

/**
 * Whether a config file describes a PostgreSQL fleet (storage.backend "postgres"), read without
 * validating it: failover, rebuild-slave and heal pick their path with it, and the path opened
 * then reports whatever else is wrong with the file.
 */
export function isPostgresFleetConfig(path: string): boolean {
  try {
    return (JSON.parse(readFileSync(path, 'utf8')) as { storage?: { backend?: unknown } }).storage?.backend === 'postgres';
  } catch {
    return false;
  }
}
