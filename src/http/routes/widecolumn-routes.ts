import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type {} from '@fastify/swagger';
import { ShardKitError } from '../../errors.js';
import { publicDataset } from '../../widecolumn/dataset-config.js';
import { backupToExportDir, EXPORT_NAME_PATTERN, EXPORT_NAME_RULE, exportToExportDir, resolveExportName } from '../../widecolumn/export-dir.js';
import { exportDirOf } from '../../widecolumn/service.js';
import type { GetRowRequest, PutItem, RowResult } from '../../widecolumn/types.js';
import { DEFAULT_LIMITS } from '../../widecolumn/limits.js';
import type { WideColumnEngine } from '../../widecolumn/engine.js';

const errorBody = {
  type: 'object',
  properties: { error: { type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } }, required: ['code', 'message'] } },
  required: ['error'],
} as const;
const errors = { 400: errorBody, 404: errorBody, 409: errorBody, 413: errorBody, 501: errorBody, 503: errorBody } as const;

const datasetJson = {
  type: 'object',
  properties: { name: { type: 'string' }, maxVersions: { type: 'integer' }, ttlSeconds: { type: 'integer' }, latestIndex: { type: 'boolean' }, createdAt: { type: 'integer' }, updatedAt: { type: 'integer' } },
  required: ['name', 'maxVersions', 'ttlSeconds', 'latestIndex'],
  additionalProperties: false,
} as const;

const cellJson = {
  type: 'object',
  properties: { timestamp: { type: 'integer' }, value: { type: 'string' }, encoding: { type: 'string', enum: ['base64'] } },
  required: ['timestamp', 'value'],
  additionalProperties: false,
} as const;

const rowJson = {
  type: 'object',
  properties: {
    row: { type: 'string' },
    columns: { type: 'object', additionalProperties: { type: 'array', items: cellJson } },
    marker: { type: ['string', 'null'] },
  },
  required: ['row', 'columns', 'marker'],
  additionalProperties: false,
} as const;

const itemJson = {
  type: 'object',
  properties: {
    column: { type: 'string' },
    value: { type: 'string' },
    timestamp: { type: 'integer', minimum: 0 },
    encoding: { type: 'string', enum: ['utf8', 'base64'] },
  },
  required: ['column', 'value'],
  additionalProperties: false,
} as const;

const readParams = {
  columns: { type: 'array', items: { type: 'string' } },
  versions: { type: 'integer', minimum: 1 },
  start: { type: 'integer', minimum: 0 },
  end: { type: 'integer', minimum: 0 },
  limit: { type: 'integer', minimum: 1 },
  marker: { type: ['string', 'null'] },
} as const;

const encodingParam = { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' } as const;

const datasetBody = { type: 'object', properties: { maxVersions: { type: 'integer' }, ttlSeconds: { type: 'integer' }, latestIndex: { type: 'boolean' } }, additionalProperties: false } as const;
const putRowBody = { type: 'object', properties: { items: { type: 'array', items: itemJson } }, required: ['items'], additionalProperties: false } as const;
const batchGetBody = {
  type: 'object',
  properties: {
    requests: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, ...readParams }, required: ['row'], additionalProperties: false } },
    encoding: encodingParam,
  },
  required: ['requests'],
  additionalProperties: false,
} as const;
const batchPutBody = {
  type: 'object',
  properties: { rows: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, items: { type: 'array', items: itemJson } }, required: ['row', 'items'], additionalProperties: false } } },
  required: ['rows'],
  additionalProperties: false,
} as const;
const batchDeleteBody = {
  type: 'object',
  properties: { rows: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, columns: { type: 'array', items: { type: 'string' } } }, required: ['row'], additionalProperties: false } } },
  required: ['rows'],
  additionalProperties: false,
} as const;
const exportName = { type: 'string', pattern: EXPORT_NAME_PATTERN, description: `An entry of the service's export directory: ${EXPORT_NAME_RULE}. Not a path.` } as const;
const backupBody = { type: 'object', properties: { name: exportName }, required: ['name'], additionalProperties: false } as const;
const exportBody = { type: 'object', properties: { dataset: { type: 'string' }, name: exportName, overwrite: { type: 'boolean' } }, required: ['dataset', 'name'], additionalProperties: false } as const;

interface JsonItem {
  column: string;
  value: string;
  timestamp?: number;
  encoding?: 'utf8' | 'base64';
}

type Encoding = 'utf8' | 'base64';

const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

function decodeItem(item: JsonItem): PutItem {
  let value: string | Buffer = item.value;
  if (item.encoding === 'base64') {
    if (!BASE64.test(item.value)) throw new ShardKitError('INVALID_ARGUMENT', `value of column ${JSON.stringify(item.column.slice(0, 80))} is not valid base64`);
    value = Buffer.from(item.value, 'base64');
  }
  return item.timestamp === undefined ? { column: item.column, value } : { column: item.column, value, timestamp: item.timestamp };
}

/** Values go out as UTF-8 text, or base64 (flagged per cell) when asked or not valid UTF-8. */
function rowToJson(r: RowResult, encoding: Encoding): { row: string; columns: Record<string, unknown[]>; marker: string | null } {
  // A null-prototype object: a column named "__proto__" is data, not a prototype.
  const columns = Object.create(null) as Record<string, unknown[]>;
  for (const c of r.columns) {
    columns[c.column] = c.cells.map((cell) =>
      encoding === 'utf8' && isUtf8(cell.value)
        ? { timestamp: cell.timestamp, value: cell.value.toString('utf8') }
        : { timestamp: cell.timestamp, value: cell.value.toString('base64'), encoding: 'base64' },
    );
  }
  return { row: r.row, columns, marker: r.marker };
}

/** Checks `name` before the schema does, so a path gets our message rather than Ajv's pattern text. */
function exportNameCheck(exportDir: string, what: string): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    // Before the schema, so a bad name gets this message rather than the pattern; a name of
    // another JSON type is left to the (non-coercing) body validator.
    const name = (request.body as { name?: unknown } | undefined)?.name;
    if (typeof name === 'string') resolveExportName(exportDir, name, what);
  };
}

function splitColumns(columns: string | undefined): string[] | undefined {
  if (columns === undefined) return undefined;
  const list = columns.split(',');
  if (list.some((c) => c.length === 0)) throw new ShardKitError('INVALID_ARGUMENT', 'columns must be a comma-separated list of non-empty names (use rows:batchGet for names with commas)');
  return list;
}

function disabled(): ShardKitError {
  return new ShardKitError('WIDECOLUMN_DISABLED', 'this service runs without the wide-column store (started with --no-widecolumn): restart it without that flag, or use a service that has it (docs/widecolumn.md)');
}

/**
 * The routes of a service started without the wide-column store (`serve --no-widecolumn`): the
 * same paths and schemas, each answering 501 WIDECOLUMN_DISABLED before any validation, so a
 * caller learns why rather than getting a bare 404 "no route". The refusal is a route-level
 * onRequest hook appended after the admin routes' token check (admin-auth.ts adds that one from
 * the root's onRoute), so an admin route without a token is still 401/403 first. The store
 * behind them throws the same error if anything ever reaches it.
 */
export function widecolumnDisabledRoutes(): (app: FastifyInstance) => Promise<void> {
  const refuse = async (): Promise<void> => {
    throw disabled();
  };
  const store = new Proxy({ limits: DEFAULT_LIMITS } as unknown as WideColumnEngine, {
    get(target, prop) {
      if (prop === 'limits') return (target as { limits: unknown }).limits;
      throw disabled();
    },
  });
  const routes = widecolumnRoutes(store, { exportDir: '' });
  return async (app: FastifyInstance) => {
    app.addHook('onRoute', (route) => {
      route.onRequest = route.onRequest === undefined ? refuse : [...[route.onRequest].flat(), refuse];
    });
    await routes(app);
  };
}

export interface WidecolumnRoutesOptions {
  /** The only directory admin backups and exports write into (default: the one openWideColumnService
   *  chose for this store, else `widecolumn-exports` next to the store directory). */
  exportDir?: string;
}

/**
 * The wide-column HTTP API (issue 6 §2) plus admin endpoints that let `shardkit wc --url` ask a
 * running service to compact, back up or export. A plugin for `buildApp({ plugins })`; the
 * store stays owned by the caller. Row keys travel URL-encoded in the path (the route is a
 * wildcard so long keys are not cut by the router's parameter length limit). Every body route
 * refuses values of the wrong JSON type instead of letting Ajv coerce them (bodyStrictValidator, app.ts).
 */
export function widecolumnRoutes(store: WideColumnEngine, options: WidecolumnRoutesOptions = {}): (app: FastifyInstance) => Promise<void> {
  const bodyLimit = Math.ceil(store.limits.maxBatchBytes * 1.5) + 1024 * 1024;
  const exportDir = options.exportDir ?? exportDirOf(store);
  return async (app: FastifyInstance) => {
    app.get('/v1/datasets', {
      schema: {
        tags: ['widecolumn'],
        summary: 'Wide-column datasets and their settings',
        response: { 200: { type: 'object', properties: { datasets: { type: 'array', items: datasetJson } }, required: ['datasets'] } },
      },
    }, async () => ({ datasets: (await store.listDatasets()).map(publicDataset) }));

    app.get<{ Params: { ds: string } }>('/v1/datasets/:ds', {
      schema: {
        tags: ['widecolumn'],
        summary: 'One dataset and its settings',
        params: { type: 'object', properties: { ds: { type: 'string' } }, required: ['ds'] },
        response: { 200: datasetJson, ...errors },
      },
    }, async (request) => publicDataset(await store.getDataset(request.params.ds)));

    app.put<{ Params: { ds: string }; Body: { maxVersions?: number; ttlSeconds?: number; latestIndex?: boolean } }>('/v1/datasets/:ds', {
      schema: {
        tags: ['widecolumn'],
        summary: 'Create a dataset or change its settings',
        description: 'maxVersions: versions kept per column (default 1); ttlSeconds: cells expire that long after their timestamp (0 = never, the default); latestIndex (creation only, default true): keep head records of each column\'s newest cell and a write log (one small record per put), so latest-version reads cost the same on deep rows. Absent fields keep their value.',
        params: { type: 'object', properties: { ds: { type: 'string' } }, required: ['ds'] },
        body: datasetBody,
        response: { 200: datasetJson, 201: datasetJson, ...errors },
      },
    }, async (request, reply) => {
      const { dataset, created } = await store.putDataset(request.params.ds, request.body ?? {});
      return reply.code(created ? 201 : 200).send(publicDataset(dataset));
    });

    app.get<{ Params: { ds: string; '*': string }; Querystring: { columns?: string; versions?: number; start?: number; end?: number; limit?: number; marker?: string; encoding: Encoding } }>('/v1/datasets/:ds/rows/*', {
      schema: {
        tags: ['widecolumn'],
        summary: 'Get Row: columns of a row, newest version first, paginated by column',
        description: 'columns: comma-separated names (default all); versions per column (default 1); time range [start, end) in ms; limit: columns per page (default 100); marker: from the previous page. Values are UTF-8 text unless encoding=base64 or the bytes are not UTF-8 (then the cell says "encoding":"base64").',
        params: { type: 'object', properties: { ds: { type: 'string' }, '*': { type: 'string' } }, required: ['ds', '*'] },
        querystring: {
          type: 'object',
          properties: {
            columns: { type: 'string' },
            versions: { type: 'integer', minimum: 1 },
            start: { type: 'integer', minimum: 0 },
            end: { type: 'integer', minimum: 0 },
            limit: { type: 'integer', minimum: 1 },
            marker: { type: 'string' },
            encoding: encodingParam,
          },
          additionalProperties: false,
        },
        response: { 200: rowJson, ...errors },
      },
    }, async (request) => {
      const q = request.query;
      const opts: GetRowRequest = { row: request.params['*'] };
      const columns = splitColumns(q.columns);
      if (columns) opts.columns = columns;
      if (q.versions !== undefined) opts.versions = q.versions;
      if (q.start !== undefined) opts.start = q.start;
      if (q.end !== undefined) opts.end = q.end;
      if (q.limit !== undefined) opts.limit = q.limit;
      if (q.marker !== undefined) opts.marker = q.marker;
      const [r] = await store.batchGetRows(request.params.ds, [opts]);
      return rowToJson(r!, q.encoding);
    });

    app.put<{ Params: { ds: string; '*': string }; Body: { items: JsonItem[] } }>('/v1/datasets/:ds/rows/*', {
      bodyLimit,
      schema: {
        tags: ['widecolumn'],
        summary: 'Put Row: add cells to a row, all in one atomic write',
        description: 'items: [{column, value, timestamp?, encoding?}]. Without a timestamp the server time is used (repeats of a column get consecutive ms); older timestamps are allowed (backfills). Values are UTF-8 text, or base64 with "encoding":"base64".',
        params: { type: 'object', properties: { ds: { type: 'string' }, '*': { type: 'string' } }, required: ['ds', '*'] },
        body: putRowBody,
        response: { 200: { type: 'object', properties: { row: { type: 'string' }, timestamp: { type: ['integer', 'null'] } }, required: ['row', 'timestamp'] }, ...errors },
      },
    }, async (request) => {
      const [r] = await store.batchPutRows(request.params.ds, [{ row: request.params['*'], items: request.body.items.map(decodeItem) }]);
      return r;
    });

    app.delete<{ Params: { ds: string; '*': string }; Querystring: { columns?: string } }>('/v1/datasets/:ds/rows/*', {
      schema: {
        tags: ['widecolumn'],
        summary: 'Delete Row: the given columns (every version), or the whole row',
        params: { type: 'object', properties: { ds: { type: 'string' }, '*': { type: 'string' } }, required: ['ds', '*'] },
        querystring: { type: 'object', properties: { columns: { type: 'string' } }, additionalProperties: false },
        response: { 200: { type: 'object', properties: { row: { type: 'string' }, deleted: { type: 'string', enum: ['row', 'columns'] } }, required: ['row', 'deleted'] }, ...errors },
      },
    }, async (request) => {
      const row = request.params['*'];
      const columns = splitColumns(request.query.columns);
      await store.batchDeleteRows(request.params.ds, [columns ? { row, columns } : { row }]);
      return { row, deleted: columns ? 'columns' : 'row' };
    });

    app.post<{ Params: { ds: string }; Body: { requests: GetRowRequest[]; encoding: Encoding } }>('/v1/datasets/:ds/rows::batchGet', {
      bodyLimit,
      schema: {
        tags: ['widecolumn'],
        summary: 'Batch Get Row',
        params: { type: 'object', properties: { ds: { type: 'string' } }, required: ['ds'] },
        body: batchGetBody,
        response: { 200: { type: 'object', properties: { results: { type: 'array', items: rowJson } }, required: ['results'] }, ...errors },
      },
    }, async (request) => {
      const results = await store.batchGetRows(request.params.ds, request.body.requests);
      return { results: results.map((r) => rowToJson(r, request.body.encoding)) };
    });

    app.post<{ Params: { ds: string }; Body: { rows: Array<{ row: string; items: JsonItem[] }> } }>('/v1/datasets/:ds/rows::batchPut', {
      bodyLimit,
      schema: {
        tags: ['widecolumn'],
        summary: 'Batch Put Row: every item of every row in one atomic write',
        params: { type: 'object', properties: { ds: { type: 'string' } }, required: ['ds'] },
        body: batchPutBody,
        response: {
          200: { type: 'object', properties: { results: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, timestamp: { type: ['integer', 'null'] } }, required: ['row', 'timestamp'] } } }, required: ['results'] },
          ...errors,
        },
      },
    }, async (request) => {
      const rows = request.body.rows.map((r) => ({ row: r.row, items: r.items.map(decodeItem) }));
      return { results: await store.batchPutRows(request.params.ds, rows) };
    });

    app.post<{ Params: { ds: string }; Body: { rows: Array<{ row: string; columns?: string[] }> } }>('/v1/datasets/:ds/rows::batchDelete', {
      bodyLimit,
      schema: {
        tags: ['widecolumn'],
        summary: 'Batch Delete Row: columns of rows, or whole rows, in one atomic write',
        params: { type: 'object', properties: { ds: { type: 'string' } }, required: ['ds'] },
        body: batchDeleteBody,
        response: { 200: { type: 'object', properties: { deleted: { type: 'integer' } }, required: ['deleted'] }, ...errors },
      },
    }, async (request) => {
      await store.batchDeleteRows(request.params.ds, request.body.rows);
      return { deleted: request.body.rows.length };
    });

    // Admin: what `shardkit wc --url` calls. A client names an entry of the export directory and
    // never gives a path: whoever can reach the service must not pick where it writes.
    app.post('/v1/admin/widecolumn/compact', {
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Run the compaction job now (expired cells and versions beyond maxVersions leave the disk)',
        response: { 200: { type: 'object', additionalProperties: { type: 'integer' } }, ...errors },
      },
    }, async () => ({ ...(await store.compact()) }));

    app.post<{ Body: { name: string } }>('/v1/admin/widecolumn/backup', {
      preValidation: exportNameCheck(exportDir, 'backup name'),
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Write a consistent backup from a RocksDB snapshot into a new directory <name> of the service\'s export directory',
        description: 'name: a plain name, not a path (an existing entry of that name is refused with ALREADY_EXISTS). The export directory is config widecolumn.exportDir, by default <data>/widecolumn-exports. The answer\'s dir is the backup\'s path on the service machine.',
        body: backupBody,
        response: {
          200: { type: 'object', properties: { name: { type: 'string' }, dir: { type: 'string' }, records: { type: 'integer' }, bytes: { type: 'integer' }, files: { type: 'integer' }, snapshotAt: { type: 'integer' } }, required: ['name', 'dir', 'records', 'bytes', 'files'] },
          ...errors,
        },
      },
    }, async (request) => backupToExportDir(store, exportDir, request.body.name));

    app.post<{ Body: { dataset: string; name: string; overwrite?: boolean } }>('/v1/admin/widecolumn/export', {
      preValidation: exportNameCheck(exportDir, 'export name'),
      schema: {
        tags: ['widecolumn-admin'],
        summary: 'Export the live cells of a dataset as Parquet (row_key, column, timestamp, value) to the file <name> of the service\'s export directory',
        description: 'name: a plain name, not a path; an existing file is replaced only with overwrite: true. The answer\'s file is its path on the service machine.',
        body: exportBody,
        response: {
          200: { type: 'object', properties: { dataset: { type: 'string' }, name: { type: 'string' }, file: { type: 'string' }, rows: { type: 'integer' }, cells: { type: 'integer' }, durationMs: { type: 'integer' } }, required: ['dataset', 'name', 'file', 'rows', 'cells'] },
          ...errors,
        },
      },
    }, async (request) => exportToExportDir(store, exportDir, request.body.dataset, request.body.name, { overwrite: request.body.overwrite === true }));
  };
}
