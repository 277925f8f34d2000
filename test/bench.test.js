// The benchmark suite's smoke mode (tiny sizes), so the scripts cannot rot:
// it must run end to end, write the JSON and the table, and account for every
// scenario, each run either measured or reported as SHORT.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OPTIONS } from '../scripts/bench/options.js';
import { gcPauses } from '../scripts/bench/gc-trace.js';
import { quantile } from '../lib/loadgen/quantile.js';

const BENCH = fileURLToPath(new URL('../scripts/bench.js', import.meta.url));

describe('benchmark suite (--smoke)', function () {
  this.timeout(120000);
  let dir;
  let result;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'bench-smoke-'));
    const proc = spawn(process.execPath, [BENCH, '--smoke', '--out', dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout.on('data', (d) => (output += d));
    proc.stderr.on('data', (d) => (output += d));
    const [code] = await once(proc, 'exit');
    result = { code, output };
  });

  after(() => rmSync(dir, { recursive: true, force: true }));

  it('exits 0 and writes latest.json with every scenario accounted for', () => {
    expect(result.code, result.output).to.equal(0);
    const { meta, targets, runs } = JSON.parse(readFileSync(path.join(dir, 'latest.json'), 'utf8'));
    expect(meta).to.include.keys('date', 'machine', 'command', 'durationS', 'options');
    expect(targets).to.have.length(11); // handshake under reuseport joined the rows (eafaf00)
    for (const t of targets) expect(t.status).to.be.oneOf(['met', 'missed', 'SHORT', 'not run']);
    const seen = new Set(runs.map((r) => r.scenario.split(' ')[0]));
    expect([...seen]).to.have.members(OPTIONS.scenarios[1].split(','));
    expect(new Set(runs.map((r) => r.variant))).to.include.members(['gateway', 'ws', 'cluster']);
    for (const run of runs) {
      expect(run.status, JSON.stringify(run)).to.be.oneOf(['ok', 'SHORT']);
      if (run.status === 'ok') expect(Object.keys(run.figures), run.scenario).to.not.be.empty;
      else expect(run.short, run.scenario).to.be.a('string').and.not.match(/^error:/);
    }
  });

  it('writes latest.md with the targets table and a table per scenario', () => {
    const md = readFileSync(path.join(dir, 'latest.md'), 'utf8');
    expect(md).to.match(/^\| target \| measured \| status \|$/m);
    for (const heading of ['idle 200', 'fan-out', 'relay', 'base-memory']) {
      expect(md).to.match(new RegExp(`^### ${heading}`, 'm'));
    }
    expect(md).to.match(/\| gateway \|.*\| ws \|.*\| cluster \|/s);
    // The gateway's worker next to the floors any Node + ws worker has.
    for (const variant of ['node, forked worker: nothing loaded', 'node, forked worker: http \\+ ws only', 'gateway worker']) {
      expect(md).to.match(new RegExp(`^\\| ${variant} \\| {2}\\| [\\d.]+ \\| [\\d.]+ \\|$`, 'm'));
    }
  });
});

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
    const script = fileURLToPath(new URL('../scripts/gc-variants.js', import.meta.url));
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
