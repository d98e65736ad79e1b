/**
 * duplicateKey against an oracle: random JSON built member by member, some objects given a name
 * twice (spelled plainly or escaped), the generator knowing which name it repeated first in
 * text order. Printed seed; replay with SHARDKIT_MODEL_SEED.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { duplicateKey } from '../../src/http/duplicate-keys.js';
import { mulberry32 } from '../../src/util/prng.js';

test('duplicateKey finds the first name given twice in one object, and nothing in valid bodies', () => {
  const seed = Number(process.env.SHARDKIT_MODEL_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`duplicate-keys seed ${seed} (replay: SHARDKIT_MODEL_SEED=${seed})`);
  const random = mulberry32(seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  // Names that look alike, escape, or hold the characters the scanner steps over.
  const NAMES = ['a', 'b', 'data', 'a"b', 'a\\b', '{', '[', ',', ':', '}', 'é', '😀', ''];
  const spell = (name: string): string => (random() < 0.3 ? `"${name.split('').map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"` : JSON.stringify(name));

  let firstDuplicate: string | undefined;
  const value = (depth: number): string => {
    const r = random();
    if (depth > 3 || r < 0.35) return pick(['1', '-2.5e3', 'true', 'null', '"x,y}"', '"{\\"a\\":1}"', '[]', '{}']);
    if (r < 0.55) return `[${Array.from({ length: Math.floor(random() * 4) }, () => value(depth + 1)).join(',')}]`;
    const names = Array.from({ length: Math.floor(random() * 5) }, () => pick(NAMES));
    const seen = new Set<string>();
    const members: string[] = [];
    for (const name of names) {
      if (seen.has(name) && random() < 0.6) continue; // most objects stay valid
      // The name comes before its value in the text: a repeat here is met before any inside.
      if (seen.has(name)) firstDuplicate ??= name;
      seen.add(name);
      members.push(`${spell(name)}:${value(depth + 1)}`);
    }
    return `{${members.join(',')}}`;
  };

  let withDuplicates = 0;
  for (let i = 0; i < 5000; i++) {
    firstDuplicate = undefined;
    const text = value(0);
    JSON.parse(text); // every case is valid JSON text
    assert.equal(duplicateKey(text), firstDuplicate, `seed ${seed}, case ${i}: ${text}`);
    if (firstDuplicate !== undefined) withDuplicates++;
  }
  assert.ok(withDuplicates > 100, `seed ${seed}: only ${withDuplicates} cases had a duplicate`);
});

test('the same name in sibling or nested objects is not a duplicate', () => {
  assert.equal(duplicateKey('{"a":{"a":1},"b":{"a":2},"c":[{"a":1},{"a":2}]}'), undefined);
  assert.equal(duplicateKey('{"a":"a","b":"a"}'), undefined);
  assert.equal(duplicateKey('["a","a",{"a":1}]'), undefined);
});
