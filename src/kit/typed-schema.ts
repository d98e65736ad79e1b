import type { KitObject } from './kit-object.js';
import type { CreateOptions, DeleteOptions, JsonObject, ListOptions, MappingListPage, UpdateOptions } from './types.js';

/**
 * What a TypeScript user declares about their schema, to type the kit's calls:
 *
 *     interface User { username: string; email?: string }
 *     type Schema = { types: { user: User; board: Board }; mappings: 'user_has_boards'; keyspaces: 'username' };
 *     const kit = await ShardKit.open<Schema>({ configPath });
 *     const u = await kit.objects.create('user', { username: 'ann' });   // KitObject<User, 'user'>
 *
 * A misspelled type, mapping or keyspace name is then a compile error, and data is the user's own
 * type (an `interface` needs no index signature). Types only: the config's schema is still what
 * the service knows at run time, and `validators` (ShardKitOptions) check data there.
 */
export interface SchemaShape {
  /** Object type name -> the shape of its data. */
  types: object;
  /** The mapping names (a union of string literals). */
  mappings?: string;
  /** The lookup keyspace names. */
  keyspaces?: string;
}

/** The schema of an untyped kit: any name, JSON data (what `ShardKit` without a type argument is). */
export interface UntypedSchema {
  types: Record<string, JsonObject>;
  mappings: string;
  keyspaces: string;
}

export type TypeName<S extends SchemaShape> = Extract<keyof S['types'], string>;
export type DataOf<S extends SchemaShape, T extends TypeName<S>> = S['types'][T] & object;
export type MappingName<S extends SchemaShape> = S extends { mappings: infer M extends string } ? M : never;
export type KeyspaceName<S extends SchemaShape> = S extends { keyspaces: infer K extends string } ? K : never;

/** An object of any of the schema's types: narrows on `type` (`if (o.type === 'user') o.data.username`). */
export type AnyObject<S extends SchemaShape> = { [T in TypeName<S>]: KitObject<DataOf<S, T>, T> }[TypeName<S>];
export type AnyData<S extends SchemaShape> = { [T in TypeName<S>]: DataOf<S, T> }[TypeName<S>];

export interface TypedObjects<S extends SchemaShape> {
  create<T extends TypeName<S>>(type: T, data: DataOf<S, T>, options?: CreateOptions): Promise<KitObject<DataOf<S, T>, T>>;
  createMany<T extends TypeName<S>>(type: T, items: ReadonlyArray<CreateOptions & { data: DataOf<S, T> }>): Promise<Array<KitObject<DataOf<S, T>, T>>>;
  get(id: bigint | string): Promise<AnyObject<S>>;
  getMany(ids: ReadonlyArray<bigint | string>, options?: { skipInvalid?: boolean }): Promise<Array<AnyObject<S> | undefined>>;
  update(id: bigint | string, fn: (data: AnyData<S>) => AnyData<S> | undefined | void, options?: UpdateOptions): Promise<AnyObject<S>>;
  /** A JSON merge patch (RFC 7396): any subset of the fields, `null` removes one. */
  patch(id: bigint | string, patch: Partial<AnyData<S>> | JsonObject, options?: UpdateOptions): Promise<AnyObject<S>>;
  delete(id: bigint | string, options?: DeleteOptions): Promise<void>;
}

export interface TypedMappings<S extends SchemaShape> {
  add(name: MappingName<S>, from: bigint | string, to: bigint | string, options?: { sequence?: number }): Promise<void>;
  list(name: MappingName<S>, from: bigint | string, options?: ListOptions): Promise<MappingListPage>;
  remove(name: MappingName<S>, from: bigint | string, to: bigint | string): Promise<boolean>;
  count(name: MappingName<S>, from: bigint | string): Promise<number>;
}

export interface TypedLookups<S extends SchemaShape> {
  put(keyspace: KeyspaceName<S>, key: string, id: bigint | string): Promise<void>;
  get(keyspace: KeyspaceName<S>, key: string): Promise<bigint | undefined>;
  delete(keyspace: KeyspaceName<S>, key: string): Promise<boolean>;
  /** The mod shard of a key (md5(key) mod N). */
  shardOf(key: string): Promise<number>;
}
