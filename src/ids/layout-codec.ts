import { ShardKitError } from '../errors.js';
import { parseId, type IdInput } from './codec.js';
import { compileLayout, type IdLayout } from './layout.js';

/*
 * IDs are split into two 32-bit halves through a shared 8-byte buffer, so encode and decode do
 * Number arithmetic and allocate at most one BigInt. BigInt shifting is ~8x slower (bench/ids).
 */
const buf = new ArrayBuffer(8);
const u64 = new BigUint64Array(buf);
const u32 = new Uint32Array(buf);
const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1;
const LO = LITTLE_ENDIAN ? 0 : 1;
const HI = LITTLE_ENDIAN ? 1 : 0;
const TWO32 = 2 ** 32;

/** Builds a u64 from two unsigned 32-bit halves with a single BigInt allocation. */
export function joinHalves(hi: number, lo: number): bigint {
  u32[HI] = hi;
  u32[LO] = lo;
  return u64[0]!;
}

/**
 * Validates an ID (bigint or decimal string) and loads it into the shared buffer, for decoders
 * that then read `idWords[ID_HI]` and `idWords[ID_LO]` before anything else touches the buffer.
 */
export function loadId(input: IdInput, what = 'id'): bigint {
  // asUintN(64, x) === x is the 0..2^64-1 check; two BigInt comparisons cost ~2x more (bench/ids).
  const id = typeof input === 'bigint' && BigInt.asUintN(64, input) === input ? input : parseId(input, what);
  u64[0] = id;
  return id;
}

export const idWords: Uint32Array = u32;
export const ID_HI = HI;
export const ID_LO = LO;

export function splitHalves(id: bigint): [hi: number, lo: number] {
  u64[0] = id;
  return [u32[HI]!, u32[LO]!];
}

interface FieldPlan {
  name: string;
  bits: number;
  shift: number;
  max: number;
  reserved: boolean;
}

export type Fields = Record<string, number>;

/** Encoder/decoder for any 64-bit layout whose fields are at most 53 bits wide. */
export class LayoutCodec {
  readonly layout: IdLayout;
  private readonly plan: FieldPlan[];

  constructor(layout: IdLayout) {
    this.layout = layout;
    this.plan = compileLayout(layout).map((f) => ({
      name: f.name,
      bits: f.bits,
      shift: Number(f.shift),
      max: f.max,
      reserved: f.reserved === true,
    }));
  }

  field(name: string): { bits: number; max: number } {
    const f = this.plan.find((p) => p.name === name);
    if (!f) throw new ShardKitError('INVALID_ARGUMENT', `layout ${this.layout.name} has no field ${name}`);
    return { bits: f.bits, max: f.max };
  }

  /** Decodes to named numeric fields; reserved bits set is INVALID_ID. */
  decode(input: IdInput): Fields {
    const id = loadId(input);
    const hi = u32[HI]!;
    const lo = u32[LO]!;
    const out: Fields = {};
    for (const f of this.plan) {
      const v = extract(hi, lo, f.shift, f.bits);
      if (f.reserved) {
        if (v !== 0) throw new ShardKitError('INVALID_ID', `id ${id} has reserved bits set (not a ${this.layout.name} id)`);
        continue;
      }
      out[f.name] = v;
    }
    return out;
  }

  /** Encodes named fields; a missing or out-of-range field is INVALID_ARGUMENT. */
  encode(fields: Record<string, number | bigint>): bigint {
    let hi = 0;
    let lo = 0;
    for (const f of this.plan) {
      if (f.reserved) continue;
      const raw = fields[f.name];
      const v = typeof raw === 'bigint' && raw >= 0n && raw <= BigInt(f.max) ? Number(raw) : raw;
      if (typeof v !== 'number' || !Number.isInteger(v) || v < 0 || v > f.max) {
        throw new ShardKitError('INVALID_ARGUMENT', `${this.layout.name} id field ${f.name} must be an integer in 0..${f.max}, got ${String(raw)}`);
      }
      [hi, lo] = deposit(hi, lo, f.shift, f.bits, v);
    }
    return joinHalves(hi, lo);
  }
}

/** Reads `bits` bits at `shift` from the (hi, lo) pair using exact Number arithmetic. */
export function extract(hi: number, lo: number, shift: number, bits: number): number {
  if (shift >= 32) return Math.floor(hi / 2 ** (shift - 32)) % 2 ** bits;
  if (shift + bits <= 32) return Math.floor(lo / 2 ** shift) % 2 ** bits;
  const lowBits = 32 - shift;
  const low = Math.floor(lo / 2 ** shift);
  const high = hi % 2 ** (bits - lowBits);
  return high * 2 ** lowBits + low;
}

function deposit(hi: number, lo: number, shift: number, bits: number, v: number): [number, number] {
  if (shift >= 32) return [hi + v * 2 ** (shift - 32), lo];
  if (shift + bits <= 32) return [hi, lo + v * 2 ** shift];
  const lowBits = 32 - shift;
  const low = v % 2 ** lowBits;
  const high = Math.floor(v / 2 ** lowBits);
  return [hi + high, lo + low * 2 ** shift];
}

export { TWO32 };
