import { formatId } from '../ids/codec.js';
import { etagOf } from './etag.js';
import type { JsonObject, ShardObject } from './types.js';

/** An object read from its shard. Keeps the stored text for the etag and for serving it as is. */
export class StoreObject implements ShardObject {
  readonly id: bigint;
  readonly type: string;
  readonly shard: number;
  readonly data: JsonObject;
  readonly createdAt: Date;
  readonly #text: string;
  #etag: string | undefined;

  constructor(id: bigint, type: string, shard: number, data: JsonObject, text: string, createdAt: Date) {
    this.id = id;
    this.type = type;
    this.shard = shard;
    this.data = data;
    this.createdAt = createdAt;
    this.#text = text;
  }

  get etag(): string {
    return (this.#etag ??= etagOf(this.#text));
  }

  /** The wire form: `{"id","type","shard","data","createdAt"}` with the ID as a string. */
  toJSON(): { id: string; type: string; shard: number; data: JsonObject; createdAt: string } {
    return { id: formatId(this.id), type: this.type, shard: this.shard, data: this.data, createdAt: this.createdAt.toISOString() };
  }

  /** The wire form as JSON text, splicing in the stored data instead of serializing it again. */
  toWireJson(): string {
    return `{"id":"${formatId(this.id)}","type":${JSON.stringify(this.type)},"shard":${this.shard},"data":${this.#text},"createdAt":"${this.createdAt.toISOString()}"}`;
  }
}
