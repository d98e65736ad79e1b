import type { Command } from 'commander';
import { shardInitOptions } from './init.js';

export function register(program: Command): void {
  const schema = program.command('schema').description('Shard schema maintenance');
  shardInitOptions(schema.command('apply'), 'schema apply', 'shards updated at once on each master')
    .description('Add the tables of new types, mappings and keyspaces in the config to every shard (CREATE TABLE IF NOT EXISTS; never drops or alters)');
}
