import type { SourceUrl } from './source-url.js';
import type { TableSource } from './table-source.js';

/** Connects to the source a URL names; the driver of the other engine is never loaded. */
export async function openTableSource(source: SourceUrl, query: string): Promise<TableSource> {
  if (source.engine === 'mysql') return (await import('./mysql-table-source.js')).MysqlTableSource.open(source.url, query);
  return (await import('./postgres-table-source.js')).PostgresTableSource.open(source.url, query);
}
