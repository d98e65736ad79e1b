import type { Command } from 'commander';
import * as tickets from './tickets.js';
import * as dev from './dev.js';
import * as init from './init.js';
import * as schema from './schema.js';
import * as serve from './serve.js';
import * as demo from './demo.js';
import * as id from './id.js';
import * as modshard from './modshard.js';
import * as topology from './topology.js';

interface CommandModule {
  register(program: Command): void;
}

/**
 * A command whose module imports its heavy dependencies at the top: it is imported only when
 * the command line names it (`wc ...`, `help wc`); otherwise a stub with the same name and
 * description stands in the top-level help.
 */
interface LazyCommandModule {
  name: string;
  description: string;
  load(): Promise<CommandModule>;
}

// wc.ts loads RocksDB and Parquet at import; test/cli/lazy-commands.test.ts checks this stub matches it.
const wc: LazyCommandModule = {
  name: 'wc',
  description: 'Wide-column store on RocksDB: compaction, backups, restores, Parquet exports (docs/widecolumn.md)',
  load: () => import('./wc.js'),
};

/**
 * Each command file exports `register(program)`, which only defines the commands: their
 * actions import the implementation (src/cli/actions/) when they run. Add new ones here.
 */
const modules: Array<CommandModule | LazyCommandModule> = [id, modshard, topology, tickets, dev, init, schema, wc, serve, demo];

/** The command the arguments (after `node main.js`) name: the first operand, or the one after `help`. */
export function selectedCommand(args: readonly string[]): string | undefined {
  const operands = args.filter((a) => !a.startsWith('-'));
  return operands[0] === 'help' ? operands[1] : operands[0];
}

export async function registerCommands(program: Command, args: readonly string[] = process.argv.slice(2)): Promise<void> {
  const selected = selectedCommand(args);
  for (const m of modules) {
    if ('register' in m) m.register(program);
    else if (m.name === selected) (await m.load()).register(program);
    else program.command(m.name).description(m.description);
  }
}
