import { createRequire } from 'node:module';
import { ShardKitError } from '../errors.js';

const load = createRequire(import.meta.url);

/**
 * Database drivers and heavy features are optional peer dependencies (package.json
 * peerDependenciesMeta): an app on SQLite installs and loads none of them. Each is loaded here,
 * on first use by the backend or feature that needs it, and a missing one is MISSING_DEPENDENCY
 * naming the package to install rather than a bare ERR_MODULE_NOT_FOUND.
 */
export function missingDependency(specifier: string, feature: string, cause?: unknown): ShardKitError {
  const pkg = packageName(specifier);
  return new ShardKitError('MISSING_DEPENDENCY', `${feature} needs the npm package ${pkg}, which is not installed: npm install ${pkg}`, { cause, details: { package: pkg } });
}

/** 'mysql2/promise' -> 'mysql2', '@dsnp/parquetjs/x' -> '@dsnp/parquetjs'. */
function packageName(specifier: string): string {
  const parts = specifier.split('/');
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!;
}

/** Only the package itself missing counts: a broken install inside it must still show as what it is. */
export function isMissingPackage(err: unknown, specifier: string): boolean {
  const pkg = packageName(specifier);
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code !== 'MODULE_NOT_FOUND' && e?.code !== 'ERR_MODULE_NOT_FOUND') return false;
  const message = String(e.message);
  return message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`);
}

/** A CommonJS driver (pg, mysql2, better-sqlite3, rocksdb-native), synchronously; Node caches it. */
export function requireOptional<T>(specifier: string, feature: string): T {
  try {
    return load(specifier) as T;
  } catch (err) {
    if (isMissingPackage(err, specifier)) throw missingDependency(specifier, feature, err);
    throw err;
  }
}

/** A module of ours that imports an optional package (`() => import('./redis-cache.js')`). */
export async function importOptional<T>(pkg: string, feature: string, importer: () => Promise<T>): Promise<T> {
  try {
    return await importer();
  } catch (err) {
    if (isMissingPackage(err, pkg)) throw missingDependency(pkg, feature, err);
    throw err;
  }
}
