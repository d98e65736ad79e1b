import { readFileSync } from 'node:fs';

/**
 * The package's version, read from its package.json (two levels above src/util/ and dist/util/ alike), so
 * the CLI's --version and the OpenAPI document never drift from what was published.
 */
export const VERSION: string = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version;
