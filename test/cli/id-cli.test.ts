import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { instagramId, pinterestId } from '../../src/index.js';
import { assertBadInput, cli, ensureBuilt } from './cli-harness.js';

before(ensureBuilt);

test('id decode: the seed example, pinterest by default, one JSON line', async () => {
  const r = await cli(['id', 'decode', '241294492511762325']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, '{"id":"241294492511762325","layout":"pinterest","shard":3429,"type":1,"localId":7075733}\n');
  const explicit = await cli(['id', 'decode', '241294492511762325', '--layout', 'pinterest']);
  assert.equal(explicit.stdout, r.stdout);
});

test('id decode --layout instagram: shard, sequence, raw ms field and ISO time of epoch + ms', async () => {
  const unixMs = Date.UTC(2012, 3, 9, 12, 0, 0, 123);
  const id = instagramId.encode({ ms: unixMs - 1314220021721, shard: 5, sequence: 1000 });
  const r = await cli(['id', 'decode', id.toString(), '--layout', 'instagram']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.split('\n').length, 2);
  assert.deepEqual(JSON.parse(r.stdout), { id: id.toString(), layout: 'instagram', shard: 5, sequence: 1000, ms: unixMs - 1314220021721, time: '2012-04-09T12:00:00.123Z' });
  assert.deepEqual(Object.keys(JSON.parse(r.stdout)), ['id', 'layout', 'shard', 'sequence', 'ms', 'time']);
  const custom = await cli(['id', 'decode', id.toString(), '--layout', 'instagram', '--epoch', '0']);
  assert.equal(custom.code, 0, custom.stderr);
  const c = JSON.parse(custom.stdout) as { ms: number; time: string };
  assert.equal(c.ms, unixMs - 1314220021721);
  assert.equal(c.time, new Date(c.ms).toISOString());
});

test('id encode prints the decimal id; ids above 2^53 round-trip exactly through the CLI', async () => {
  const seed = await cli(['id', 'encode', '--shard', '3429', '--type', '1', '--local', '7075733']);
  assert.equal(seed.code, 0, seed.stderr);
  assert.equal(seed.stdout, '241294492511762325\n');
  const cases = [
    { shard: 65535, type: 1023, localId: 2 ** 36 - 1 },
    { shard: 40000, type: 513, localId: 2 ** 36 - 3 },
    { shard: 1, type: 0, localId: 1 },
  ];
  await Promise.all(cases.map(async (parts) => {
    const enc = await cli(['id', 'encode', '--shard', String(parts.shard), '--type', String(parts.type), '--local', String(parts.localId)]);
    assert.equal(enc.code, 0, enc.stderr);
    const printed = enc.stdout.trim();
    assert.equal(printed, pinterestId.encode(parts).toString());
    const dec = await cli(['id', 'decode', printed]);
    assert.equal(dec.code, 0, dec.stderr);
    assert.deepEqual(JSON.parse(dec.stdout), { id: printed, layout: 'pinterest', ...parts });
  }));
  // 2^62 - 1 is far above 2^53: a Number would have printed 4611686018427388000.
  const top = await cli(['id', 'encode', '--shard', '65535', '--type', '1023', '--local', String(2 ** 36 - 1)]);
  assert.equal(top.stdout, '4611686018427387903\n');
  const inst = await cli(['id', 'decode', '18446744073709551615', '--layout', 'instagram']);
  assert.equal(JSON.parse(inst.stdout).id, '18446744073709551615');
});

test('id decode: bad input exits 2 with one line on stderr', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['id', 'decode', 'abc'], /INVALID_ID/],
    [['id', 'decode', '12x'], /INVALID_ID/],
    [['id', 'decode', '1.5'], /INVALID_ID/],
    [['id', 'decode', '--', '-1'], /INVALID_ID/],
    [['id', 'decode', '-1'], /INVALID_ID|unknown option/],
    [['id', 'decode', '18446744073709551616'], /INVALID_ID.*64 bits/],
    [['id', 'decode', '99999999999999999999999999'], /INVALID_ID/],
    [['id', 'decode', '4611686018427387904'], /INVALID_ID.*reserved bits/],
    [['id', 'decode', '18446744073709551615'], /INVALID_ID.*reserved bits/],
    [['id', 'decode', '1', '--layout', 'twitter'], /INVALID_ARGUMENT.*unknown layout/],
    [['id', 'decode', '1', '--epoch', '5'], /INVALID_ARGUMENT.*--epoch/],
    [['id', 'decode', '1', '--layout', 'instagram', '--epoch', '-5'], /INVALID_ARGUMENT/],
    [['id', 'decode', '1', '--layout', 'instagram', '--epoch', 'soon'], /INVALID_ARGUMENT/],
    [['id', 'decode', '1', '--layout', 'instagram', '--epoch', '99999999999999999999'], /INVALID_ARGUMENT/],
    [['id', 'decode'], /missing required argument/],
    [['id', 'decode', '1', '2'], /too many arguments/],
  ];
  await Promise.all(cases.map(async ([args, pattern]) => assertBadInput(await cli(args), args.join(' '), pattern)));
});

test('id encode: bad input exits 2 with one line on stderr', async () => {
  const ok = ['--shard', '1', '--type', '1', '--local', '1'];
  const cases: Array<[string[], RegExp]> = [
    [['--shard', '65536', '--type', '1', '--local', '1'], /--shard must be an integer in 0\.\.65535/],
    [['--shard', '-1', '--type', '1', '--local', '1'], /INVALID_ARGUMENT|--shard/],
    [['--shard', 'x', '--type', '1', '--local', '1'], /INVALID_ARGUMENT.*--shard/],
    [['--shard', '1', '--type', '1024', '--local', '1'], /--type must be an integer in 0\.\.1023/],
    [['--shard', '1', '--type', '1', '--local', String(2 ** 36)], /--local must be an integer in 0\.\.68719476735/],
    [['--shard', '1', '--type', '1', '--local', '1.5'], /INVALID_ARGUMENT/],
    [['--shard', '1', '--type', '1'], /required option '--local/],
    [[...ok, '--bogus'], /unknown option/],
  ];
  await Promise.all(cases.map(async ([args, pattern]) => assertBadInput(await cli(['id', 'encode', ...args]), args.join(' '), pattern)));
});

test('modshard: 1537 for "1.2.3.4", 1524 for the seed\'s "1.2.3.4\\n", --shards N', async () => {
  const [a, b, c, d] = await Promise.all([
    cli(['modshard', '1.2.3.4']),
    cli(['modshard', '1.2.3.4\n']),
    cli(['modshard', 'alice@example.com', '--shards', '16']),
    cli(['modshard', 'ünïcødé 🙂']),
  ]);
  assert.deepEqual([a.code, a.stdout], [0, '1537\n']);
  assert.deepEqual([b.code, b.stdout], [0, '1524\n']);
  assert.equal(c.code, 0, c.stderr);
  const { modShard } = await import('../../src/index.js');
  assert.equal(c.stdout, `${modShard('alice@example.com', 16)}\n`);
  assert.equal(d.stdout, `${modShard('ünïcødé 🙂')}\n`);
});

test('modshard: bad --shards, a missing, empty or too long key exits 2 with one line', async () => {
  const cases: Array<[string[], RegExp]> = [
    [['modshard', 'k', '--shards', '0'], /INVALID_ARGUMENT.*--shards/],
    [['modshard', 'k', '--shards', '-3'], /INVALID_ARGUMENT|--shards/],
    [['modshard', 'k', '--shards', 'many'], /INVALID_ARGUMENT.*--shards/],
    [['modshard', 'k', '--shards', '1.5'], /INVALID_ARGUMENT/],
    [['modshard', 'k', '--shards', String(2 ** 21 + 1)], /INVALID_ARGUMENT/],
    [['modshard'], /missing required argument/],
    // The keys HTTP refuses (#34 finding 10: '' printed 638).
    [['modshard', ''], /INVALID_ARGUMENT.*non-empty/],
    [['modshard', 'x'.repeat(1025)], /INVALID_ARGUMENT.*1024/],
  ];
  await Promise.all(cases.map(async ([args, pattern]) => assertBadInput(await cli(args), args.join(' '), pattern)));
});

test('every command added here has --help text', async () => {
  for (const args of [['id', 'decode'], ['id', 'encode'], ['modshard'], ['topology', 'show']]) {
    const r = await cli([...args, '--help']);
    assert.equal(r.code, 0, args.join(' '));
    assert.match(r.stdout, /Usage: shardkit/);
    assert.match(r.stdout, /Example|default map/);
  }
});
