import type { Command } from 'commander';
import type { SeedOptions } from '../actions/demo-seed.js';
import { action, intOption, urlOption } from '../run-action.js';

export function register(program: Command): void {
  const demo = program.command('demo').description('Demo data for a running service');
  demo
    .command('seed')
    .description('Fill a Pinterest-like graph (users, boards, pins, likes, follows) through the HTTP API')
    .option('--url <url>', 'base URL of a running `shardkit serve`', urlOption('--url'), 'http://127.0.0.1:7070')
    .option('--users <n>', 'number of users (each gets 3 boards of 8 pins, 10 likes, 5 follows)', intOption('--users', 1, 100000), 100)
    .option('--concurrency <n>', 'requests in flight', intOption('--concurrency', 1, 256), 16)
    .option('--seed <n>', 'random seed (same seed, same shape)', intOption('--seed', 0, 2 ** 31), 1)
    .addHelpText('after', `
With the default 100 users: 2,800 objects and about 10,000 requests. Progress goes to stderr
(a bar on a TTY, JSON lines otherwise); a summary with IDs to try goes to stdout.`)
    .action(action(async (opts: SeedOptions) => (await import('../actions/demo-seed.js')).demoSeedCommand(opts)));
}
