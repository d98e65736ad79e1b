// JSON schemas of the wide-column routes (data and admin).
import { errorBody } from '../../schemas.js';
import { EXPORT_NAME_PATTERN, EXPORT_NAME_RULE } from '../../../widecolumn/export-dir.js';

/** The errors a wide-column route can answer; the body is the one shared errorBody of src/http. */
export const errors = { 400: errorBody, 404: errorBody, 409: errorBody, 413: errorBody, 501: errorBody, 503: errorBody } as const;

export const datasetJson = {
  type: 'object',
  properties: { name: { type: 'string' }, maxVersions: { type: 'integer' }, ttlSeconds: { type: 'integer' }, latestIndex: { type: 'boolean' }, createdAt: { type: 'integer' }, updatedAt: { type: 'integer' } },
  required: ['name', 'maxVersions', 'ttlSeconds', 'latestIndex'],
  additionalProperties: false,
} as const;

export const cellJson = {
  type: 'object',
  properties: { timestamp: { type: 'integer' }, value: { type: 'string' }, encoding: { type: 'string', enum: ['base64'] } },
  required: ['timestamp', 'value'],
  additionalProperties: false,
} as const;

export const rowJson = {
  type: 'object',
  properties: {
    row: { type: 'string' },
    columns: {
      type: 'array',
      description: 'In column-name order (UTF-8 bytes), the order paging follows: an array, because a JSON object would let clients reorder integer-like names',
      items: { type: 'object', properties: { column: { type: 'string' }, cells: { type: 'array', items: cellJson } }, required: ['column', 'cells'], additionalProperties: false },
    },
    marker: { type: ['string', 'null'] },
  },
  required: ['row', 'columns', 'marker'],
  additionalProperties: false,
} as const;

export const itemJson = {
  type: 'object',
  properties: {
    column: { type: 'string' },
    value: { type: 'string' },
    timestamp: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    encoding: { type: 'string', enum: ['utf8', 'base64'] },
  },
  required: ['column', 'value'],
  additionalProperties: false,
} as const;

export const readParams = {
  columns: { type: 'array', items: { type: 'string' } },
  versions: { type: 'integer', minimum: 1 },
  // A timestamp past 2^53-1 would be rounded by the query's number coercion before any check: refused as itself.
  start: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  end: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
  limit: { type: 'integer', minimum: 1 },
  marker: { type: ['string', 'null'] },
} as const;

export const encodingParam = { type: 'string', enum: ['utf8', 'base64'], default: 'utf8' } as const;

export const datasetBody = { type: 'object', properties: { maxVersions: { type: 'integer' }, ttlSeconds: { type: 'integer' }, latestIndex: { type: 'boolean' } }, additionalProperties: false } as const;
export const putRowBody = { type: 'object', properties: { items: { type: 'array', items: itemJson } }, required: ['items'], additionalProperties: false } as const;
export const batchGetBody = {
  type: 'object',
  properties: {
    requests: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, ...readParams }, required: ['row'], additionalProperties: false } },
    encoding: encodingParam,
  },
  required: ['requests'],
  additionalProperties: false,
} as const;
export const batchPutBody = {
  type: 'object',
  properties: { rows: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, items: { type: 'array', items: itemJson } }, required: ['row', 'items'], additionalProperties: false } } },
  required: ['rows'],
  additionalProperties: false,
} as const;
export const batchDeleteBody = {
  type: 'object',
  properties: { rows: { type: 'array', items: { type: 'object', properties: { row: { type: 'string' }, columns: { type: 'array', items: { type: 'string' } } }, required: ['row'], additionalProperties: false } } },
  required: ['rows'],
  additionalProperties: false,
} as const;
export const exportName = { type: 'string', pattern: EXPORT_NAME_PATTERN, description: `An entry of the service's export directory: ${EXPORT_NAME_RULE}. Not a path.` } as const;
export const backupBody = { type: 'object', properties: { name: exportName }, required: ['name'], additionalProperties: false } as const;
export const exportBody = { type: 'object', properties: { dataset: { type: 'string' }, name: exportName, overwrite: { type: 'boolean' } }, required: ['dataset', 'name'], additionalProperties: false } as const;

