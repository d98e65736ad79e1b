/**
 * The CLI tests run command lines in their own process (cli() in cli-harness.ts). These run the
 * same command lines through the built binary in a new Node process and expect the very same
 * outcome: exit code, stdout and stderr, for a success, bad input (exit 2, one line), a usage
 * error from commander, --help and --version. Exit 3 (process.exitCode) through the binary:
 * test/ops/mapping-drift.test.ts. Pipes: closed-pipe.test.ts; what a command loads:
 * lazy-commands.test.ts.
 */
import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { assertBadInput, cli, cliProcess, ensureBuilt, type CliResult } from './cli-harness.js';

before(ensureBuilt);

const LINES: string[][] = [
  ['id', 'decode', '241294492511762325'],
  ['topology', 'show', '--json'],
  ['id', 'decode', 'abc'],
  ['id', 'encode', '--shard', 'x', '--type', '1', '--local', '1'],
  ['no-such-command'],
  ['id', 'decode'],
  ['--help'],
  ['id', 'encode', '--help'],
  ['--version'],
];

const real = new Map<string, CliResult>();

test('in-process runs and the built binary give the same exit code, stdout and stderr', async () => {
  for (const args of LINES) {
    const [inProcess, binary] = [await cli(args), await cliProcess(args)];
    real.set(args.join(' '), binary);
    assert.deepEqual(inProcess, binary, args.join(' '));
  }
});

test('the binary: exit 0 with the answer on stdout; bad input exit 2 with one line, no stack trace', () => {
  const ok = real.get('id decode 241294492511762325')!;
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stderr, '');
  assert.equal((JSON.parse(ok.stdout) as { shard: number }).shard, 3429);
  assertBadInput(real.get('id decode abc')!, 'id decode abc', /^shardkit: INVALID_ID: /);
  const usage = real.get('no-such-command')!;
  assert.equal(usage.code, 2, usage.stderr);
  assert.equal(usage.stdout, '');
  assert.match(usage.stderr, /unknown command 'no-such-command'/);
});
