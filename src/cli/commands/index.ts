import type { Command } from 'commander';

/** Each command file exports `register(program)`; add new ones here. */
const modules: Array<{ register(program: Command): void }> = [];

export function registerCommands(program: Command): void {
  for (const m of modules) m.register(program);
}
