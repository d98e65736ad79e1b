import { DumpTableProgress } from '../src/moves/mariadb/dump-table-progress.js';
const row = (i: number) => `(${i},'{"title":"pin ${i} ${'x'.repeat(200)}","board":"${i % 97}"}',1700000000${i % 1000})`;
let s = '';
for (let t = 0; t < 10; t++) { s += `--\n-- Dumping data for table \`t${t}\`\n--\n\n`; for (let b = 0; b < 30; b++) { s += 'INSERT INTO `t` VALUES '; const rs = []; for (let r = 0; r < 60; r++) rs.push(row(t * 10000 + b * 60 + r)); s += rs.join(',\n') + ';\n'; } }
const buf = Buffer.from(s, 'latin1');
const total = 300e6; const chunks: Buffer[] = []; for (let o = 0; o + 65536 <= buf.length; o += 65536) chunks.push(buf.subarray(o, o + 65536));
console.log('sample MB', (buf.length / 1e6).toFixed(1), 'chunks', chunks.length);
for (let rep = 0; rep < 3; rep++) {
  const t0 = process.cpuUsage(); const w = performance.now();
  let bytes = 0; let rows = 0; let carry = ''; const tables = new DumpTableProgress(); let pos;
  while (bytes < total) for (const chunk of chunks) {
    bytes += chunk.length; const piece = chunk.toString('latin1'); const n = tables.feed(piece); rows += n;
    const text = carry + piece; if (/-- Current Database: /.test(text)) {}
    const m = /gtid_slave_pos\s*=\s*'([^']*)'/.exec(text); if (m) pos = m[1]; carry = text.slice(-256);
  }
  const c = process.cpuUsage(t0);
  console.log('MB', (bytes / 1e6).toFixed(0), 'rows', rows, 'cpu ms', ((c.user + c.system) / 1000).toFixed(0), 'wall', (performance.now() - w).toFixed(0));
}
