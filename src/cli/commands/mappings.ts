import type { Command } from 'commander';
import type { DriftCommandOptions } from '../actions/mappings.js';
import { action, intOption } from '../run-action.js';

export function register(program: Command): void {
  const mappings = program.command('mappings').description('Mapping maintenance: drift between a mapping and its reverse (docs/mappings.md)');
  mappings
    .command('drift')
    .description('Find pairs of <mapping> without their reverse in <reverse>, and pairs of <reverse> without theirs in <mapping>; with --repair, make <reverse> agree with <mapping>')
    .argument('<mapping>', 'the mapping taken as the truth, e.g. board_has_pins')
    .argument('<reverse>', 'its reverse, e.g. pin_owned_by_board')
    .option('--data <dir>', 'data directory (as for serve)', './data')
    .option('--config <file>', 'config file (default: <data>/shardkit.json)')
    .option('--repair', 'add to <reverse> the pairs it lacks (with the mapping\'s sequence) and remove those whose mapping pair is gone; <mapping> is never written')
    .option('--page-size <n>', 'rows per scan page', intOption('--page-size', 1, 1000), 500)
    .option('--json', 'print the report as one JSON object')
    .addHelpText('after', `
Every object shard is scanned on both sides, a page at a time; memory stays at one page.
Progress: a bar on a TTY, JSON lines on stderr otherwise. Exit code 0 when the two agree (or were
repaired), 3 when drift was found and not repaired.

Example:
  shardkit mappings drift board_has_pins pin_owned_by_board --data ./data
  shardkit mappings drift user_likes_pins pin_liked_by_user --repair --json`)
    .action(action(async (mapping: string, reverse: string, opts: DriftCommandOptions) => (await import('../actions/mappings.js')).drift(mapping, reverse, opts)));
}
