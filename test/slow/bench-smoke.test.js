// The benchmark suite's smoke mode (tiny sizes), so the scripts cannot rot:
// it must run end to end, write the JSON and the table, and account for every
// scenario, each run either measured or reported as SHORT. It judges no
// figure (a benchmark's figures are for scripts/, not for assertions), so it
// runs with the slow tests (npm run test:slow), not in npm test.
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { OPTIONS } from '../../scripts/bench/options.js';

const BENCH = fileURLToPath(new URL('../../scripts/bench.js', import.meta.url));

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
    expect(targets).to.have.length(14); // every target row, Pusher's three against native included
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
