// A WideColumnEngine that goes through the HTTP routes (app.inject): the conformance suite and
// its model test run through it, so the routes' JSON (column order, paging, value encoding,
// errors) is held to the same oracle as the library (issue 15, defect 4).
import Fastify, { type FastifyInstance } from 'fastify';
import { ShardKitError, type ErrorCode } from '../../src/errors.js';
import { bodyStrictValidator } from '../../src/http/app.js';
import { installErrorHandler } from '../../src/http/error-handler.js';
import { widecolumnRoutes } from '../../src/http/routes/widecolumn-routes.js';
import type { DatasetConfig, DatasetSettings } from '../../src/widecolumn/dataset-config.js';
import type { EngineBackupReport, EngineCompactionReport, EngineExportReport, WideColumnEngine } from '../../src/widecolumn/engine.js';
import type { DeleteRowRequest, GetRowOptions, GetRowRequest, PutItem, PutRowRequest, PutRowResult, RowResult } from '../../src/widecolumn/types.js';

interface JsonRow {
  row: string;
  columns: Array<{ column: string; cells: Array<{ timestamp: number; value: string; encoding?: string }> }>;
  marker: string | null;
}

export class HttpEngine implements WideColumnEngine {
  readonly kind: string;
  closed = false;

  private constructor(private readonly app: FastifyInstance, private readonly inner: WideColumnEngine) {
    this.kind = `http+${inner.kind}`;
  }

  get limits(): WideColumnEngine['limits'] {
    return this.inner.limits;
  }

  static async over(inner: WideColumnEngine): Promise<HttpEngine> {
    // The same parser settings as buildApp (src/http/app.ts).
    const app = Fastify({ onProtoPoisoning: 'error', ajv: { customOptions: { removeAdditional: false } }, schemaController: { compilersFactory: { buildValidator: bodyStrictValidator } } });
    installErrorHandler(app);
    await app.register(widecolumnRoutes(inner, { exportDir: '/nonexistent' }));
    await app.ready();
    return new HttpEngine(app, inner);
  }

  private async call<T>(method: 'GET' | 'PUT' | 'POST' | 'DELETE', url: string, payload?: unknown): Promise<T> {
    if (this.closed) throw new ShardKitError('CLOSED', 'the engine is closed');
    const res = await this.app.inject(payload === undefined ? { method, url } : { method, url, payload: payload as object });
    const body = res.json() as T & { error?: { code: string; message: string } };
    if (res.statusCode >= 400) throw new ShardKitError((body.error?.code ?? 'INTERNAL') as ErrorCode, body.error?.message ?? res.body);
    return body;
  }

  async listDatasets(): Promise<DatasetConfig[]> {
    return (await this.call<{ datasets: DatasetConfig[] }>('GET', '/v1/datasets')).datasets;
  }

  getDataset(name: string): Promise<DatasetConfig> {
    return this.call('GET', `/v1/datasets/${encodeURIComponent(name)}`);
  }

  async putDataset(name: string, settings: DatasetSettings = {}): Promise<{ dataset: DatasetConfig; created: boolean }> {
    if (this.closed) throw new ShardKitError('CLOSED', 'the engine is closed');
    const res = await this.app.inject({ method: 'PUT', url: `/v1/datasets/${encodeURIComponent(name)}`, payload: settings as object });
    if (res.statusCode >= 400) throw new ShardKitError(res.json().error.code, res.json().error.message);
    return { dataset: res.json(), created: res.statusCode === 201 };
  }

  /** Without named columns, the GET route (its query string); with them, rows:batchGet. */
  async getRow(dataset: string, row: string, options: GetRowOptions = {}): Promise<RowResult> {
    if (options.columns !== undefined) return (await this.batchGetRows(dataset, [{ ...options, row }]))[0]!;
    const q = new URLSearchParams({ encoding: 'base64' });
    for (const k of ['versions', 'start', 'end', 'limit'] as const) if (options[k] !== undefined) q.set(k, String(options[k]));
    if (options.marker) q.set('marker', options.marker);
    return fromJson(await this.call<JsonRow>('GET', `/v1/datasets/${encodeURIComponent(dataset)}/rows/${encodeURIComponent(row)}?${q}`));
  }

  async batchGetRows(dataset: string, requests: GetRowRequest[]): Promise<RowResult[]> {
    const body = { requests: requests.map((r) => Object.fromEntries(Object.entries(r).filter(([, v]) => v !== undefined && v !== null))), encoding: 'base64' };
    return (await this.call<{ results: JsonRow[] }>('POST', `/v1/datasets/${encodeURIComponent(dataset)}/rows:batchGet`, body)).results.map(fromJson);
  }

  async putRow(dataset: string, row: string, items: PutItem[]): Promise<PutRowResult> {
    return this.call('PUT', `/v1/datasets/${encodeURIComponent(dataset)}/rows/${encodeURIComponent(row)}`, { items: items.map(toJsonItem) });
  }

  async batchPutRows(dataset: string, rows: PutRowRequest[]): Promise<PutRowResult[]> {
    return (await this.call<{ results: PutRowResult[] }>('POST', `/v1/datasets/${encodeURIComponent(dataset)}/rows:batchPut`, { rows: rows.map((r) => ({ row: r.row, items: r.items.map(toJsonItem) })) })).results;
  }

  async deleteRow(dataset: string, row: string, columns?: string[]): Promise<void> {
    await this.batchDeleteRows(dataset, [columns === undefined ? { row } : { row, columns }]);
  }

  async batchDeleteRows(dataset: string, rows: DeleteRowRequest[]): Promise<void> {
    await this.call('POST', `/v1/datasets/${encodeURIComponent(dataset)}/rows:batchDelete`, { rows });
  }

  compact(): Promise<EngineCompactionReport> {
    return this.call('POST', '/v1/admin/widecolumn/compact');
  }

  backup(dir: string): Promise<EngineBackupReport> {
    return this.inner.backup(dir);
  }

  exportParquet(dataset: string, file: string, options?: { overwrite?: boolean }): Promise<EngineExportReport> {
    return this.inner.exportParquet(dataset, file, options);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.app.close();
    await this.inner.close();
  }
}

function toJsonItem(it: PutItem): { column: string; value: string; timestamp?: number; encoding?: 'base64' } {
  const base = typeof it.value === 'string' ? { column: it.column, value: it.value } : { column: it.column, value: Buffer.from(it.value).toString('base64'), encoding: 'base64' as const };
  return it.timestamp === undefined ? base : { ...base, timestamp: it.timestamp };
}

function fromJson(r: JsonRow): RowResult {
  return { row: r.row, marker: r.marker, columns: r.columns.map((c) => ({ column: c.column, cells: c.cells.map((x) => ({ timestamp: x.timestamp, value: Buffer.from(x.value, 'base64') })) })) };
}
