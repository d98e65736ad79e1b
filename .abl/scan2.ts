import { DumpRowCounter } from '../src/moves/mariadb/dump-row-count.js';
function oldRows(text: string): number { let n = 0; for (let i = text.indexOf('INSERT INTO '); i >= 0; i = text.indexOf('INSERT INTO ', i + 12)) n++; return n + (text.match(/\),\n?\(/g)?.length ?? 0); }
const row = (i: number) => `(${i},'{\\"title\\":\\"pin ${i} ${'x'.repeat(200)}\\",\\"board\\":\\"${i % 97}\\"}',1700000000${i % 1000})`;
let s = ''; let expect = 0;
for (let t = 0; t < 10; t++) { s += `--\n-- Dumping data for table \`t${t}\`\n--\n\nLOCK TABLES \`t${t}\` WRITE;\n`; for (let b = 0; b < 30; b++) { s += 'INSERT INTO `t` VALUES '; const rs = []; for (let r = 0; r < 60; r++) rs.push(row(t * 10000 + b * 60 + r)); expect += 60; s += rs.join(',\n') + ';\n'; } }
const buf = Buffer.from(s, 'latin1');
const chunks: Buffer[] = []; for (let o = 0; o < buf.length; o += 65536) chunks.push(buf.subarray(o, Math.min(buf.length, o + 65536)));
const reps = Math.ceil(359e6 / buf.length);
for (const [name, mk] of [['old', () => ({ count: oldRows })], ['new', () => new DumpRowCounter()]] as const) {
  for (let k = 0; k < 3; k++) {
    const t0 = process.cpuUsage(); let rows = 0;
    for (let r = 0; r < reps; r++) { const c = (mk as any)(); for (const ch of chunks) rows += c.count(ch.toString('latin1')); }
    const c = process.cpuUsage(t0);
    console.log(name, 'rows', rows, 'expect', expect * reps, 'cpu ms', ((c.user + c.system) / 1000).toFixed(0));
  }
}
