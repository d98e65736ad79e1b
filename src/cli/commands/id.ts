import type { Command } from 'commander';
import { ShardKitError } from '../../errors.js';
import { formatId, parseId } from '../../ids/codec.js';
import { INSTAGRAM_EPOCH } from '../../ids/layout.js';
import { instagramId, INSTAGRAM_MAX_MS } from '../../ids/instagram-id.js';
import { pinterestId, PINTEREST_MAX_LOCAL_ID, PINTEREST_MAX_SHARD, PINTEREST_MAX_TYPE } from '../../ids/pinterest-id.js';
import { action, intOption } from '../run-action.js';

const LAYOUTS = ['pinterest', 'instagram'] as const;
type LayoutName = (typeof LAYOUTS)[number];
// A Date holds at most 8.64e15 ms; epoch + a 41-bit field must stay printable.
const MAX_EPOCH = 8_640_000_000_000_000 - INSTAGRAM_MAX_MS;

function layoutOption(value: string): LayoutName {
  if (!(LAYOUTS as readonly string[]).includes(value)) {
    throw new ShardKitError('INVALID_ARGUMENT', `unknown layout ${JSON.stringify(value.slice(0, 40))}; use one of ${LAYOUTS.join(', ')}`);
  }
  return value as LayoutName;
}

/** One JSON line per decoded ID; the ID stays a string so it survives JSON.parse exactly. */
export function decodeIdJson(input: string, layout: LayoutName, epoch?: number): Record<string, unknown> {
  const id = parseId(input);
  if (layout === 'pinterest') {
    if (epoch !== undefined) throw new ShardKitError('INVALID_ARGUMENT', '--epoch applies to --layout instagram only');
    const p = pinterestId.decode(id);
    return { id: formatId(id), layout, shard: p.shard, type: p.type, localId: p.localId };
  }
  const p = instagramId.decode(id, epoch ?? INSTAGRAM_EPOCH);
  return { id: formatId(id), layout, shard: p.shard, sequence: p.sequence, ms: p.ms, time: p.date.toISOString() };
}

export function register(program: Command): void {
  const id = program.command('id').description('Encode and decode 64-bit IDs (docs/ids.md)');

  id.command('decode')
    .description('Decode an ID into its fields and print one JSON object')
    .argument('<id>', 'the ID as an unsigned decimal integer (up to 64 bits)')
    .option('--layout <name>', `bit layout: ${LAYOUTS.join(' or ')}`, layoutOption, 'pinterest')
    .option('--epoch <ms>', `custom epoch in unix ms for --layout instagram (default ${INSTAGRAM_EPOCH})`, intOption('--epoch', 0, MAX_EPOCH))
    .addHelpText('after', `
Examples:
  $ shardkit id decode 241294492511762325
  {"id":"241294492511762325","layout":"pinterest","shard":3429,"type":1,"localId":7075733}
  $ shardkit id decode 1387263000967006721 --layout instagram
  {"id":"1387263000967006721","layout":"instagram","shard":2962,"sequence":513,"ms":165374636765,"time":"2016-11-19T22:30:58.486Z"}
  ("ms" is the raw milliseconds-since-epoch field; "time" is epoch + ms in ISO 8601.)`)
    .action(action((input: string, opts: { layout: LayoutName; epoch?: number }) => {
      process.stdout.write(`${JSON.stringify(decodeIdJson(input, opts.layout, opts.epoch))}\n`);
    }));

  id.command('encode')
    .description('Compose a Pinterest-layout object ID: (shard << 46) | (type << 36) | local; prints it in decimal')
    .requiredOption('--shard <n>', `logical shard, 0..${PINTEREST_MAX_SHARD}`, intOption('--shard', 0, PINTEREST_MAX_SHARD))
    .requiredOption('--type <n>', `object type id, 0..${PINTEREST_MAX_TYPE}`, intOption('--type', 0, PINTEREST_MAX_TYPE))
    .requiredOption('--local <n>', `local id (the row's AUTO_INCREMENT in that shard), 0..${PINTEREST_MAX_LOCAL_ID}`, intOption('--local', 0, PINTEREST_MAX_LOCAL_ID))
    .addHelpText('after', `
Example:
  $ shardkit id encode --shard 3429 --type 1 --local 7075733
  241294492511762325`)
    .action(action((opts: { shard: number; type: number; local: number }) => {
      process.stdout.write(`${formatId(pinterestId.encode({ shard: opts.shard, type: opts.type, localId: opts.local }))}\n`);
    }));
}
