/**
 * JSON schemas shared by the routes. IDs are decimal strings on the wire. ID fields in request
 * bodies carry no `type`: Ajv would coerce a JSON number into a string, and a number above 2^53
 * has already lost digits by then; the handler refuses anything but a string (INVALID_ID).
 */
export const ID_PATTERN = '^(0|[1-9][0-9]{0,19})$';

export const idString = { type: 'string', description: 'A 64-bit ID as a decimal string', examples: ['241294492511762325'] } as const;

export const idInBody = {
  description: 'A 64-bit ID as a decimal string (JSON numbers are refused: they lose digits above 2^53)',
  examples: ['241294492511762325'],
} as const;

export const errorBody = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: { code: { type: 'string' }, message: { type: 'string' } },
      required: ['code', 'message'],
    },
  },
  required: ['error'],
} as const;

export const errorResponses = {
  400: errorBody,
  404: errorBody,
  409: errorBody,
  412: errorBody,
  413: errorBody,
  415: errorBody,
  503: errorBody,
} as const;

export const objectBody = {
  type: 'object',
  properties: {
    id: idString,
    type: { type: 'string' },
    shard: { type: 'integer' },
    data: { type: 'object', additionalProperties: true },
    createdAt: { type: 'string', format: 'date-time' },
  },
  required: ['id', 'type', 'shard', 'data', 'createdAt'],
} as const;

export const nameParam = { type: 'string', maxLength: 64 } as const;

export const listQuery = {
  type: 'object',
  properties: {
    limit: { type: 'integer', minimum: 1, maximum: 1000, default: 50 },
    order: { type: 'string', enum: ['asc', 'desc'], default: 'desc' },
    cursor: { type: 'string', maxLength: 64, description: 'The `next` of the previous page (opaque)' },
  },
  additionalProperties: false,
} as const;
