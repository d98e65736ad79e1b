// The wide-column data routes: datasets, and Get/Put/Delete Row with their batch forms.
import { MAX_ANSWER_BYTES } from '../../limits.js';
import type { FastifyInstance } from 'fastify';
import { ShardKitError } from '../../../errors.js';
import { publicDataset } from '../../../widecolumn/dataset-config.js';
import type { WideColumnEngine } from '../../../widecolumn/engine.js';
import type { GetRowRequest } from '../../../widecolumn/types.js';
import { batchDeleteBody, batchGetBody, batchPutBody, datasetBody, datasetJson, encodingParam, errors, putRowBody, readParams, rowJson } from './schemas.js';
import { decodeItem, rowToJson, type Encoding, type JsonItem } from './value-encoding.js';

function splitColumns(columns: string | undefined): string[] | undefined {
  if (columns === undefined) return undefined;
  const list = columns.split(',');
  if (list.some((c) => c.length === 0)) throw new ShardKitError('INVALID_ARGUMENT', 'columns must be a comma-separated list of non-empty names (use rows:batchGet for names with commas)');
  return list;
}

/** Registers the data routes on `app`; `bodyLimit` applies to every route with a body of rows. */
export async function registerDataRoutes(app: FastifyInstance, store: WideColumnEngine, bodyLimit: number): Promise<void> {
    app.get('/v1/datasets', {
      schema: {
        tags: ['widecolumn'],
        summary: 'Wide-column datasets and their settings',
        response: { 200: { type: 'object', properties: { datasets: { type: 'array', items: datasetJson } }, required: ['datasets'] }, ...errors },
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
            start: readParams.start,
            end: readParams.end,
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
      const [r] = await store.batchGetRows(request.params.ds, [opts], { maxBytes: MAX_ANSWER_BYTES });
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
      const { requests, encoding } = request.body;
      // The same request twice only multiplies the answer (300 copies of a 14 MiB row took the
      // process down): refused, and the read stops at MAX_ANSWER_BYTES.
      const seen = new Map<string, number>();
      requests.forEach((r, i) => {
        const key = JSON.stringify(r);
        const first = seen.get(key);
        if (first !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `requests[${i}] repeats requests[${first}]: ask for each row once`);
        seen.set(key, i);
      });
      // One read for the batch (one snapshot: a batch put is seen whole across its rows). The
      // engine stops reading once the raw bytes pass the budget; the JSON (base64 is larger)
      // is measured again here.
      const results: unknown[] = [];
      let bytes = 0;
      for (const r of await store.batchGetRows(request.params.ds, requests, { maxBytes: MAX_ANSWER_BYTES })) {
        const json = rowToJson(r, encoding);
        bytes += JSON.stringify(json).length;
        if (bytes > MAX_ANSWER_BYTES) throw new ShardKitError('RESPONSE_TOO_LARGE', `the answer would exceed ${MAX_ANSWER_BYTES} bytes after ${results.length} of ${requests.length} rows: ask for fewer rows or columns per request`);
        results.push(json);
      }
      return { results };
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
}
