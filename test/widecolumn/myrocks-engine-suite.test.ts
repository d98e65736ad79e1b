// The wide-column conformance suite on the MyRocks engine: two real MariaDB servers with MyRocks
// (one set for the file); each test gets an empty fleet (every wc database dropped and re-created).
import { after, before } from 'node:test';
import { runWideColumnSuite } from '../conformance/widecolumn-suite.js';
import { startMyrocksServers } from './myrocks-servers.js';

let fx: Awaited<ReturnType<typeof startMyrocksServers>>;
before(async () => {
  fx = await startMyrocksServers();
});
after(async () => {
  await fx?.stop();
});
runWideColumnSuite({
  name: 'myrocks',
  supports: { crossRowBatches: false },
  factory: async ({ clock }) => {
    await fx.reset();
    const engine = await fx.engine({ clock });
    return {
      engine,
      async cleanup() {
        await engine.close();
      },
    };
  },
});
