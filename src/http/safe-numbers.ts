import { ShardKitError } from '../errors.js';

/**
 * Integer literals beyond ±(2^53−1) in request JSON are refused. JSON.parse rounds them
 * (12345678901234567890 becomes 12345678901234567000), so storing them would silently change the
 * client's data; they travel as strings, as IDs do. Exact storage would need a big-number JSON
 * parser, merge patch and cache format on every path (docs/http-api.md, "Numbers"). The rule is
 * about integer literals, read from the body text: a literal with a fraction or an exponent
 * (1.5e300, 6.02e23) is a floating-point number by its own spelling and comes back as the same
 * double. Only request bodies are checked: data stored earlier keeps working.
 */
export function checkIntegerLiterals(text: string): void {
  const found = unsafeIntegerAt(text);
  if (found !== undefined) {
    const { literal } = found;
    // An ID sent as a JSON number is the documented INVALID_ID, whatever its size (docs/http-api.md).
    const key = keyBefore(text, found.index);
    if (key !== undefined && ID_FIELDS.has(key)) throw new ShardKitError('INVALID_ID', `${key} must be an ID as a decimal string, not a JSON number (${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} cannot be carried exactly)`);
    throw new ShardKitError('INVALID_ARGUMENT', `the integer ${literal.length > 40 ? `${literal.slice(0, 40)}…` : literal} is beyond ±(2^53-1), which a JSON number cannot carry exactly (it would be stored as ${Number(literal)}): send it as a string`);
  }
}

/** The first integer literal of valid JSON text that is not a safe integer, if any. */
export function findUnsafeInteger(text: string): string | undefined {
  return unsafeIntegerAt(text)?.literal;
}

function unsafeIntegerAt(text: string): { literal: string; index: number } | undefined {
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // A string: skip to its closing quote (a backslash escapes the next character).
      for (i++; i < n && text.charCodeAt(i) !== 0x22; i++) if (text.charCodeAt(i) === 0x5c) i++;
    } else if (c === 0x2d || (c >= 0x30 && c <= 0x39)) {
      let j = c === 0x2d ? i + 1 : i;
      const first = j;
      while (j < n && isDigit(text.charCodeAt(j))) j++;
      const next = text.charCodeAt(j);
      // 16 digits or more can leave the safe range; fewer never do.
      if (j - first >= 16 && next !== 0x2e && next !== 0x65 && next !== 0x45) {
        const literal = text.slice(i, j);
        if (!Number.isSafeInteger(Number(literal))) return { literal, index: i };
      }
      while (j < n && /[0-9.eE+-]/.test(text[j]!)) j++;
      i = j - 1;
    }
  }
  return undefined;
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** Request body fields that hold an ID (lookup put, create and batch create). */
const ID_FIELDS = new Set(['id', 'near']);

/** The object key whose value starts at `at` (`"near": 123`), if the text there is a member value. */
function keyBefore(text: string, at: number): string | undefined {
  const m = /"((?:[^"\\]|\\.)*)"\s*:\s*$/.exec(text.slice(Math.max(0, at - 200), at));
  return m?.[1];
}
