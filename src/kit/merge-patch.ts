import type { JsonObject, JsonValue } from './types.js';

/**
 * RFC 7396 JSON merge patch: objects merge recursively, `null` removes a member, anything else
 * replaces. Members are defined, never assigned, so a `__proto__` key stays a plain key.
 */
export function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: JsonObject = target !== null && typeof target === 'object' && !Array.isArray(target) ? target : {};
  const out: JsonObject = {};
  for (const key of Object.keys(base)) define(out, key, base[key]!);
  for (const key of Object.keys(patch)) {
    const value = patch[key]!;
    if (value === null) delete out[key];
    else define(out, key, mergePatch(Object.hasOwn(out, key) ? out[key] : undefined, value));
  }
  return out;
}

function define(obj: JsonObject, key: string, value: JsonValue): void {
  Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
}
