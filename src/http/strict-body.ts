import type { FastifyRequest } from 'fastify';
import { ShardKitError } from '../errors.js';

/** The part of JSON Schema our body schemas use that says which JSON type goes where. */
export interface TypedSchema {
  readonly type?: string | readonly string[];
  readonly properties?: Readonly<Record<string, TypedSchema>>;
  readonly items?: TypedSchema;
  readonly additionalProperties?: boolean | TypedSchema;
  /** Other keywords (description, limits, ...) are the validator's business. */
  readonly [keyword: string]: unknown;
}

function hasType(type: string, v: unknown): boolean {
  switch (type) {
    case 'string': return typeof v === 'string';
    case 'integer': return typeof v === 'number' && Number.isInteger(v);
    case 'number': return typeof v === 'number';
    case 'boolean': return typeof v === 'boolean';
    case 'null': return v === null;
    case 'array': return Array.isArray(v);
    case 'object': return typeof v === 'object' && v !== null && !Array.isArray(v);
    default: return true;
  }
}

/**
 * The first place where `value` has another JSON type than `schema` says (`body/items/0/value
 * must be string`), or null. Only the keys present are looked at: missing and unknown keys are
 * left to the schema validator.
 */
export function findTypeMismatch(schema: TypedSchema, value: unknown, path: string): string | null {
  if (schema.type !== undefined) {
    const types = typeof schema.type === 'string' ? [schema.type] : schema.type;
    if (!types.some((t) => hasType(t, value))) return `${path} must be ${types.join(' or ')}`;
  }
  if (Array.isArray(value)) {
    if (schema.items) {
      for (let i = 0; i < value.length; i++) {
        const m = findTypeMismatch(schema.items, value[i], `${path}/${i}`);
        if (m) return m;
      }
    }
  } else if (typeof value === 'object' && value !== null) {
    for (const key of Object.keys(value)) {
      const sub = schema.properties && Object.hasOwn(schema.properties, key)
        ? schema.properties[key]
        : typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
      if (!sub) continue;
      const m = findTypeMismatch(sub, (value as Record<string, unknown>)[key], `${path}/${key}`);
      if (m) return m;
    }
  }
  return null;
}

/**
 * A route `preValidation` hook that refuses JSON bodies whose values have the wrong type.
 * Fastify's Ajv coerces types (app-wide, which query strings need): `"value": 5` would become
 * "5" and `"overwrite": 1` true. This runs before that, on the body as parsed.
 */
export function strictBodyTypes(schema: TypedSchema): (request: FastifyRequest) => Promise<void> {
  return async (request) => {
    if (request.body === undefined) return;
    const mismatch = findTypeMismatch(schema, request.body, 'body');
    if (mismatch) throw new ShardKitError('INVALID_ARGUMENT', mismatch);
  };
}
