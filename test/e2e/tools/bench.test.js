// The benchmark scripts' parts that can be checked without a load: the
// --trace-gc reader and the GC variants' table. The whole suite's smoke run
// is in bench-smoke.slow.js (npm run test:slow).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { gcPauses } from '../../../scripts/bench/gc-trace.js';
import { quantile } from '../../../lib/loadgen/quantile.js';

describe('benchmark: --trace-gc reader', () => {
  it('tells manual collections (reason testing) from V8 own and reads the pause', () => {
    const lines = [
      '[7:0x6f13e50]      172 ms: Scavenge 69.7 (86.9) -> 67.8 (99.4) MB, 27.96 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
      '[7:0x6f13e50]      388 ms: Mark-Compact 100.9 (134.3) -> 86.0 (119.4) MB, 97.98 / 0.00 ms  (average mu = 0.242, current mu = 0.242) testing; GC in old space requested',
      '[8:0x6f13e50]      390 ms: Scavenge 9.7 (16.9) -> 7.8 (19.4) MB, 1.50 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; ',
      '{"level":30,"msg":"not a gc line"}'
    ];
    expect(gcPauses(lines, (pid) => pid === 7)).to.deep.equal({ manual: [97.98], automatic: [27.96] });
    expect(quantile([5, 1, 4, 2, 3], 0.99)).to.equal(5);
    expect(quantile([], 0.99)).to.equal(0);
  });
});

describe('benchmark: gc-variants', () => {
  it('measures every manual GC variant in one run, and refuses to run without --expose-gc', async () => {
    const script = fileURLToPath(new URL('../../../scripts/gc-variants.js', import.meta.url));
    const run = async (nodeArgs) => {
      const proc = spawn(process.execPath, [...nodeArgs, script, '--rounds', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      proc.stdout.on('data', (d) => (out += d));
      proc.stderr.on('data', (d) => (out += d));
      const [code] = await once(proc, 'exit');
      return { code, out };
    };
    const measured = await run(['--expose-gc']);
    expect(measured.code, measured.out).to.equal(0);
    const rows = measured.out.split('\n').filter((l) => /^\| [a-z]/.test(l) && !l.startsWith('| variant'));
    expect(rows).to.have.length(4);
    for (const row of rows) expect(row).to.match(/\| [\d.]+ \| [\d.]+ \|$/);
    const refused = await run([]);
    expect(refused.code).to.equal(2);
    expect(refused.out).to.include('--expose-gc');
  });
});
