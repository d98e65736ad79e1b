import type { Command } from 'commander';
import * as auth from './auth.js';
import * as tickets from './tickets.js';
import * as dev from './dev.js';
import * as init from './init.js';
import * as schema from './schema.js';
import * as serve from './serve.js';
import * as demo from './demo.js';
import * as id from './id.js';
import * as mappings from './mappings.js';
import * as modshard from './modshard.js';
import * as topology from './topology.js';
import * as shards from './shards.js';
import * as wc from './wc.js';
import * as failover from './failover.js';
import * as migrate from './migrate.js';
import * as backup from './backup.js';
import * as exportCmd from './export.js';

interface CommandModule {
  register(program: Command): void;
}

/**
 * Each command file exports `register(program)`, which only defines the commands: their
 * actions import the implementation (src/cli/actions/) when they run. Add new ones here.
 */
const modules: CommandModule[] = [id, modshard, topology, shards, tickets, dev, init, schema, mappings, wc, failover, backup, exportCmd, migrate, serve, auth, demo];

export function registerCommands(program: Command): void {
  for (const m of modules) m.register(program);
}
