import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DumpRowCounter, dumpRows } from '../../src/moves/mariadb/dump-row-count.js';

/**
 * The copy's row count is read off the dump (#29: counting the loaded tables took 1.0-1.7 s of a
 * 1M-row copy), so it must be the rows the server loads: string values that look like tuple
 * borders or statement ends are data, wherever the stream is cut.
 */
const hostile = [
  '-- MariaDB dump 10.19\n--\n-- Current Database: `shard_0001`\n--\n\n',
  "CREATE TABLE `pins` (\n  `local_id` bigint NOT NULL,\n  `data` longtext DEFAULT '(x),(y);' COMMENT 'INSERT INTO ''(''',\n  PRIMARY KEY (`local_id`)\n);\n",
  '--\n-- Dumping data for table `pins`\n--\n\nLOCK TABLES `pins` WRITE;\n/*!40000 ALTER TABLE `pins` DISABLE KEYS */;\n',
  "INSERT INTO `pins` VALUES\n(1,'{\\\"t\\\":\\\"a),(b\\\"}',1700000000000),\n",
  "(2,'it\\'s (not) a row),\\n(8,'' is still the string',NULL),\n",
  "(3,'ends in a backslash \\\\',0x28292C28),\n",
  "(4,'\\\\\\'),(\\\\',0x),\n",
  "(5,'a;\\nINSERT INTO `pins` VALUES (99,''x'');',-1);\n",
  'INSERT INTO `we``ird (VALUES)` VALUES (6,\'VALUES (\'),(7,\'\');\n',
  '/*!40000 ALTER TABLE `pins` ENABLE KEYS */;\nUNLOCK TABLES;\n',
  "-- INSERT INTO `pins` VALUES (100,'a comment, not a row');\n",
].join('');

test('the row count of a dump is its tuples: quotes, escapes, parentheses and semicolons inside values are data', () => {
  assert.equal(dumpRows(hostile), 7);
  // Where the old estimate (INSERTs plus `),(` borders anywhere) went wrong:
  assert.equal(dumpRows("INSERT INTO `pins` VALUES (1,'a),(b'),(2,'c'),\n(3,'d'),\n(4,'x),\\n(y');\n"), 4);
  assert.equal(dumpRows("INSERT INTO `pins` VALUES (1,'x\\\\'),(2,'y\\\\\\\\');\n"), 2, 'a value ending in escaped backslashes ends there');
  assert.equal(dumpRows('CREATE TABLE `pins` (\n  `local_id` bigint\n);\n'), 0);
  assert.equal(dumpRows(''), 0);
});

test('the same count wherever the stream is cut: in two at every position, and one character at a time', () => {
  const counted = (pieces: string[]) => {
    const c = new DumpRowCounter();
    return pieces.reduce((n, p) => n + c.count(p), 0);
  };
  assert.equal(counted([...hostile]), 7);
  for (let cut = 0; cut <= hostile.length; cut++) assert.equal(counted([hostile.slice(0, cut), hostile.slice(cut)]), 7, `cut at ${cut}`);
  for (let size = 2; size < 40; size += 3) {
    const pieces: string[] = [];
    for (let i = 0; i < hostile.length; i += size) pieces.push(hostile.slice(i, i + size));
    assert.equal(counted(pieces), 7, `pieces of ${size}`);
  }
});
