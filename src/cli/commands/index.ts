import type { Command } from 'commander';
import * as tickets from './tickets.js';
import * as dev from './dev.js';
import * as init from './init.js';
import * as schema from './schema.js';
import * as wc from './wc.js';
import * as serve from './serve.js';
import * as demo from './demo.js';
import * as id from './id.js';
import * as modshard from './modshard.js';
import * as topology from './topology.js';

/** Each command file exports `register(program)`; add new ones here. */
const modules: Array<{ register(program: Command): void }> = [id, modshard, topology, tickets, dev, init, schema, wc, serve, demo];

export function registerCommands(program: Command): void {
  for (const m of modules) m.register(program);
}
