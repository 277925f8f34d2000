// `node bin/gateway.js doctor` as a user runs it, on this machine and on a
// fixture root. This machine's processes get 20,000 open files and cannot get
// more, so 1M connections over 2 workers must fail on open files and 10k pass.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { readSnapshot } from '../../../lib/runtime/proc.js';
import { FD_HEADROOM } from '../../../lib/runtime/capacity.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const TUNED = fileURLToPath(new URL('../../fixtures/proc-tuned', import.meta.url));

function doctor(...args) {
  const run = spawnSync(process.execPath, [GATEWAY, 'doctor', ...args], { encoding: 'utf8' });
  return { code: run.status, stdout: run.stdout, stderr: run.stderr };
}

describe('gateway doctor (command line)', () => {
  const hardLimit = readSnapshot().openFiles.hard;

  it('exits 1 for 1,000,000 connections over 2 workers and flags open files with the fix', () => {
    const { code, stdout } = doctor('--connections', '1000000', '--workers', '2');
    expect(code, stdout).to.equal(1);
    const needed = 500000 + FD_HEADROOM;
    expect(stdout).to.match(new RegExp(`^FAIL +open files per process +${hardLimit.toLocaleString('en-US')} +needed ${needed.toLocaleString('en-US')}$`, 'm'));
    expect(stdout).to.include(`fix: LimitNOFILE=${needed} in the systemd unit`);
    expect(stdout).to.match(/^FAIL: \d+ limits? would stop 1,000,000 connections\.$/m);
  });

  it('exits 0 for 10,000 connections over 2 workers', () => {
    const { code, stdout } = doctor('--connections', '10000', '--workers', '2');
    expect(code, stdout).to.equal(0);
    expect(stdout).to.match(/^OK +open files per process/m);
    expect(stdout).not.to.match(/^FAIL/m);
  });

  it('prints JSON with --json', () => {
    const { code, stdout } = doctor('--connections', '1000000', '--workers', '2', '--json');
    expect(code).to.equal(1);
    const report = JSON.parse(stdout);
    expect(report).to.include({ connections: 1000000, workers: 2, backlog: 65535, ok: false });
    expect(report.limits.find((r) => r.id === 'open-files')).to.include({ status: 'fail', current: hardLimit });
  });

  it('reads another root: a tuned host passes 1,000,000 connections', () => {
    const { code, stdout } = doctor('--root', TUNED, '--connections', '1000000', '--workers', '2');
    expect(code, stdout).to.equal(0);
    expect(stdout).to.match(/^OK +net\.netfilter\.nf_conntrack_max +not loaded$/m);
  });

  it('exits 2 with a message for bad flags', () => {
    for (const args of [['--connections', '0'], ['--connections', 'many'], ['--workers', '0'], ['--bogus']]) {
      const { code, stderr } = doctor(...args);
      expect(code, args.join(' ')).to.equal(2);
      expect(stderr).to.match(/^error: /);
    }
  });
});
