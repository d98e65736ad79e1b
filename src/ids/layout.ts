import { ShardKitError } from '../errors.js';

/**
 * Bit layouts are data, so other Snowflake-style layouts are configuration.
 * Fields are listed from the most significant end; `reserved` fields must be zero.
 */
export interface BitField {
  readonly name: string;
  readonly bits: number;
  readonly reserved?: boolean;
}

export interface IdLayout {
  readonly name: string;
  readonly fields: readonly BitField[];
  /** Custom epoch in unix ms, for time-based layouts. */
  readonly epoch?: number;
}

export interface CompiledField extends BitField {
  readonly shift: bigint;
  readonly mask: bigint;
  readonly max: number;
}

/** Layouts come from configuration, so a bad one is INVALID_CONFIG naming what is wrong. */
export function compileLayout(layout: IdLayout): CompiledField[] {
  const bad = (m: string): never => {
    throw new ShardKitError('INVALID_CONFIG', `id layout ${String(layout?.name)}: ${m}`);
  };
  if (layout === null || typeof layout !== 'object' || !Array.isArray(layout.fields)) bad('needs a fields array');
  if (layout.epoch !== undefined && (!Number.isSafeInteger(layout.epoch) || layout.epoch < 0)) bad('epoch must be a non-negative integer (unix ms)');
  const names = new Set<string>();
  for (const f of layout.fields) {
    if (typeof f?.name !== 'string' || f.name === '') bad('every field needs a name');
    if (names.has(f.name)) bad(`field ${f.name} is declared twice`);
    names.add(f.name);
    if (!Number.isInteger(f.bits) || f.bits <= 0 || f.bits > 53) bad(`field ${f.name} must be 1..53 bits`);
  }
  const total = layout.fields.reduce((n, f) => n + f.bits, 0);
  if (total !== 64) bad(`fields add up to ${total} bits, not 64`);
  let shift = 64;
  return layout.fields.map((f) => {
    shift -= f.bits;
    const mask = (1n << BigInt(f.bits)) - 1n;
    return { ...f, shift: BigInt(shift), mask, max: Number(mask) };
  });
}

export const PINTEREST_LAYOUT: IdLayout = {
  name: 'pinterest',
  fields: [
    { name: 'reserved', bits: 2, reserved: true },
    { name: 'shard', bits: 16 },
    { name: 'type', bits: 10 },
    { name: 'localId', bits: 36 },
  ],
};

export const INSTAGRAM_EPOCH = 1314220021721;

export const INSTAGRAM_LAYOUT: IdLayout = {
  name: 'instagram',
  epoch: INSTAGRAM_EPOCH,
  fields: [
    { name: 'ms', bits: 41 },
    { name: 'shard', bits: 13 },
    { name: 'sequence', bits: 10 },
  ],
};
