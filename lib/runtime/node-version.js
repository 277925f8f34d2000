// Refuses an unsupported Node.js with one line, before anything else loads.
// Every entry point (the gateway and its doctor, the load generator, the
// soak, the benchmarks) imports this first. The version needed is read from
// package.json's "engines", the one place it is written.
import { readFileSync } from 'node:fs';

const { engines } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
const needed = engines.node.replace(/^>=\s*/, ''); // ">=22.12" -> "22.12"

if (olderThan(process.versions.node, needed)) {
  process.stderr.write(`Node.js ${process.versions.node} found; this gateway needs Node.js ${needed} or later (${engines.node})\n`);
  process.exit(1);
}

/** Whether dotted version `found` is below `floor` (missing parts count as 0). */
export function olderThan(found, floor) {
  const a = found.split('.').map(Number);
  const b = floor.split('.').map(Number);
  for (let i = 0; i < b.length; i++) {
    if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) < b[i];
  }
  return false;
}
