import { formatId } from '../ids/codec.js';
import { etagOf } from './etag.js';
import type { JsonObject, ShardObject } from './types.js';

/**
 * An object read from its shard. Keeps the stored text: the etag is computed from it, `data`
 * is parsed from it on first access, and the HTTP service sends it as is.
 */
export class KitObject<D extends object = JsonObject, T extends string = string> implements ShardObject<D> {
  readonly id: bigint;
  /** The type name; with a typed schema, the literal that narrows `data` (`if (o.type === 'user')`). */
  readonly type: T;
  readonly shard: number;
  readonly createdAt: Date;
  readonly #text: string;
  #data: D | undefined;
  #etag: string | undefined;

  constructor(id: bigint, type: string, shard: number, data: JsonObject | undefined, text: string, createdAt: Date) {
    this.id = id;
    // The kit builds objects from names the schema validated: the literal type is the caller's view.
    this.type = type as T;
    this.shard = shard;
    this.#data = data as D | undefined;
    this.createdAt = createdAt;
    this.#text = text;
  }

  get data(): D {
    return (this.#data ??= JSON.parse(this.#text) as D);
  }

  /** The data as stored (JSON text), kept so it can be cached or sent without serializing again. */
  get storedText(): string {
    return this.#text;
  }

  get etag(): string {
    return (this.#etag ??= etagOf(this.#text));
  }

  /** The wire form: `{"id","type","shard","data","createdAt"}` with the ID as a string. */
  toJSON(): { id: string; type: T; shard: number; data: D; createdAt: string } {
    // (the `data` getter parses the stored text if nothing has yet)
    return { id: formatId(this.id), type: this.type, shard: this.shard, data: this.data, createdAt: this.createdAt.toISOString() };
  }

  /** The wire form as JSON text, splicing in the stored data instead of serializing it again. */
  toWireJson(): string {
    // Type names are config identifiers (^[a-z][a-z0-9_]*$): no escaping needed.
    return `{"id":"${formatId(this.id)}","type":"${this.type}","shard":${this.shard},"data":${this.#text},"createdAt":"${isoString(this.createdAt.getTime())}"}`;
  }
}

const TWO = Array.from({ length: 100 }, (_, i) => String(i).padStart(2, '0'));

/**
 * Date#toISOString for 0000..9999 AD, without a Date: the civil-from-days algorithm
 * (H. Hinnant). Date#toISOString was the largest single cost of serving an object over HTTP.
 */
export function isoString(ms: number): string {
  if (!Number.isInteger(ms) || ms < -62167219200000 || ms > 253402300799999) return new Date(ms).toISOString();
  const days = Math.floor(ms / 86400000);
  let rest = ms - days * 86400000;
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const doe = z - era * 146097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36524) - Math.floor(doe / 146096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const hh = Math.floor(rest / 3600000);
  rest -= hh * 3600000;
  const mm = Math.floor(rest / 60000);
  rest -= mm * 60000;
  const ss = Math.floor(rest / 1000);
  const milli = rest - ss * 1000;
  return `${String(year).padStart(4, '0')}-${TWO[month]}-${TWO[day]}T${TWO[hh]}:${TWO[mm]}:${TWO[ss]}.${String(milli).padStart(3, '0')}Z`;
}
