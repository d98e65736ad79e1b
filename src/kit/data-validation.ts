import { ShardKitError } from '../errors.js';

/**
 * A validator of one type's data, in the Standard Schema shape (https://standardschema.dev) that
 * zod, valibot and arktype implement: `kit = new ShardKit({ ..., validators: { user: z.object(...) } })`.
 * Only synchronous validation: an update's check runs inside the row lock.
 */
export interface StandardSchemaLike {
  readonly '~standard': {
    validate(value: unknown): StandardResult | Promise<StandardResult>;
  };
}
type StandardResult = { readonly value?: unknown; readonly issues?: ReadonlyArray<{ readonly message: string; readonly path?: ReadonlyArray<PropertyKey | { readonly key: PropertyKey }> }> };

/** Returns what is wrong with `data` (a path and a message), or undefined when it is valid. */
export type DataCheck = (data: unknown) => string | undefined;

export function standardCheck(type: string, schema: StandardSchemaLike): DataCheck {
  if (typeof schema?.['~standard']?.validate !== 'function') throw new ShardKitError('INVALID_ARGUMENT', `validators.${type} is not a Standard Schema validator (zod, valibot, arktype)`);
  return (data) => {
    const result = schema['~standard'].validate(data);
    if (result instanceof Promise) throw new ShardKitError('INVALID_ARGUMENT', `the validator of ${type} is asynchronous: only synchronous validators can check data`);
    const issue = result.issues?.[0];
    if (issue === undefined) return undefined;
    const path = (issue.path ?? []).map((p) => String(typeof p === 'object' && p !== null && 'key' in p ? p.key : p));
    return `/${path.join('/')}: ${issue.message}`;
  };
}

/**
 * Checks from the config's `schema.types[].dataSchema` (JSON Schema, compiled by Ajv). Ajv is
 * loaded only when a type declares one, so a kit without them does not pay for it.
 */
export async function jsonSchemaChecks(types: ReadonlyArray<{ name: string; dataSchema?: Record<string, unknown> }>): Promise<Map<string, DataCheck>> {
  const out = new Map<string, DataCheck>();
  const declared = types.filter((t) => t.dataSchema !== undefined);
  if (declared.length === 0) return out;
  const mod = (await import('ajv')) as unknown as { default: new (options: object) => { compile(schema: object): ((data: unknown) => boolean) & { errors?: Array<{ instancePath: string; message?: string }> | null } } };
  const ajv = new mod.default({ allErrors: false, strict: false });
  for (const t of declared) {
    let validate: ReturnType<typeof ajv.compile>;
    try {
      validate = ajv.compile(t.dataSchema!);
    } catch (err) {
      throw new ShardKitError('INVALID_CONFIG', `schema.types ${t.name}: dataSchema is not a valid JSON Schema: ${(err as Error).message}`);
    }
    out.set(t.name, (data) => {
      if (validate(data)) return undefined;
      const e = validate.errors?.[0];
      return `${e?.instancePath || '/'}: ${e?.message ?? 'is not valid'}`;
    });
  }
  return out;
}

/** INVALID_ARGUMENT naming the type and the bad field, or nothing when there is no check or it passes. */
export function checkData(checks: ReadonlyMap<string, DataCheck> | undefined, type: string, data: unknown, what = 'data'): void {
  const check = checks?.get(type);
  if (check === undefined) return;
  const problem = check(data);
  if (problem !== undefined) throw new ShardKitError('INVALID_ARGUMENT', `${what} of ${type} is not valid: ${problem}`, { details: { field: problem.split(':')[0] } });
}
