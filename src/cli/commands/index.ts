import type { Command } from 'commander';
import * as tickets from './tickets.js';

/** Each command file exports `register(program)`; add new ones here. */
const modules: Array<{ register(program: Command): void }> = [tickets];

export function registerCommands(program: Command): void {
  for (const m of modules) m.register(program);
}
