// The sysctl kit and scripts/tune.sh. Nothing here changes this machine: the
// dry run reads the live /proc/sys, and every real run acts on a copy of a
// fixture tree through --root.
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSnapshot, sysctlFile } from '../../../lib/runtime/proc.js';
import { checkLimits } from '../../../lib/doctor/limits.js';
import { Status } from '../../../lib/doctor/status.js';

const here = (file) => fileURLToPath(new URL(file, import.meta.url));
const KIT = here('../../../sysctl/');
const CONF = path.join(KIT, '99-ws-gateway.conf');
const TUNE = here('../../../scripts/tune.sh');

/** The kit's [key, value] pairs, whitespace in values folded. */
function kitEntries() {
  return readFileSync(CONF, 'utf8')
    .split('\n')
    .filter((line) => line.trim() && !line.startsWith('#'))
    .map((line) => {
      const match = line.match(/^([a-z0-9_.-]+) = (\d+(?:\s+\d+)*)$/);
      expect(match, `not a "key = numbers" line: ${line}`).to.be.ok;
      return [match[1], match[2].split(/\s+/).join(' ')];
    });
}

/** Each kit key's value under a root's /proc/sys ('missing' when absent). */
function kitValues(root) {
  const snapshot = readSnapshot(root);
  return Object.fromEntries(kitEntries().map(([key]) => [key, snapshot.sysctl(key)?.join(' ') ?? 'missing']));
}

function tune(...args) {
  const run = spawnSync(TUNE, args, { encoding: 'utf8' });
  expect(run.status, run.stderr + run.stdout).to.equal(0);
  return run.stdout;
}

describe('sysctl kit and scripts/tune.sh', () => {
  it('holds "key = value" lines, each under its comment, each key known to the kernel', () => {
    const lines = readFileSync(CONF, 'utf8').split('\n');
    const entries = kitEntries();
    const keys = entries.map(([key]) => key);
    expect(new Set(keys).size, 'no key twice').to.equal(keys.length);
    for (const [key] of entries) {
      expect(lines[lines.findIndex((l) => l.startsWith(`${key} =`)) - 1], `comment above ${key}`).to.match(/^# \S/);
      // The kernel's own list: /proc/sys. Netfilter keys exist only while nf_conntrack is loaded.
      const known = existsSync(path.join('/proc', sysctlFile(key))) || (key.startsWith('net.netfilter.') && !existsSync('/proc/sys/net/netfilter'));
      expect(known, `${key} is not a sysctl of this kernel`).to.equal(true);
    }
  });

  it('sets every sysctl the doctor checks', () => {
    const keys = kitEntries().map(([key]) => key);
    const checked = checkLimits(readSnapshot('/'), { connections: 1, workers: 1, backlog: 1 }).map((r) => r.sysctl).filter(Boolean);
    expect(keys).to.include.members(checked);
  });

  it('--dry-run on this machine prints each change and changes nothing', () => {
    const before = kitValues('/');
    const persisted = existsSync('/etc/sysctl.d/99-ws-gateway.conf');
    const out = tune('--dry-run');
    expect(kitValues('/')).to.deep.equal(before);
    expect(existsSync('/etc/sysctl.d/99-ws-gateway.conf')).to.equal(persisted);
    expect(existsSync('/var/lib/ws-gateway/sysctl.restore'), 'no restore file written').to.equal(false);
    expect(out).to.match(/^dry run: nothing is changed$/m);
    for (const [key] of kitEntries()) {
      const line = out.split('\n').find((l) => l.match(/^(set|ok|skip) +([^ :]+)/)?.[2] === key);
      expect(line, `a line for ${key}`).to.be.a('string');
      if (line.startsWith('set')) expect(line).to.match(new RegExp(`^set  ${key.replaceAll('.', '\\.')}: ${before[key]} -> \\d`));
      if (line.startsWith('ok')) expect(line).to.equal(`ok   ${key} = ${before[key]}`);
      if (line.startsWith('skip')) expect(before[key]).to.equal('missing');
    }
  });

  describe('on a copy of a fixture root', () => {
    let root;
    beforeEach(() => (root = mkdtempSync(path.join(os.tmpdir(), 'tune-'))));
    afterEach(() => rmSync(root, { recursive: true, force: true }));

    it('applies the kit so the doctor passes its sysctls at 1M connections, is idempotent, and restores', () => {
      cpSync(here('../../fixtures/proc-stock'), root, { recursive: true });
      const original = kitValues(root);
      const first = tune('--root', root, '--install-limits', '--install-unit');
      expect(first).to.match(/^set {2}net\.core\.somaxconn: 4096 -> 65535$/m);

      const tuned = checkLimits(readSnapshot(root), { connections: 1000000, workers: 2, backlog: 65535 }).filter((r) => r.sysctl);
      for (const r of tuned) expect([Status.OK, Status.INFO], r.id).to.include(r.status);
      for (const [kit, installed] of [
        ['ws-gateway-limits.conf', 'etc/security/limits.d/ws-gateway.conf'],
        ['ws-gateway.service', 'etc/systemd/system/ws-gateway.service']
      ]) {
        expect(readFileSync(path.join(root, installed), 'utf8')).to.equal(readFileSync(path.join(KIT, kit), 'utf8'));
      }
      const persisted = readFileSync(path.join(root, 'etc/sysctl.d/99-ws-gateway.conf'), 'utf8');
      for (const [key, value] of kitEntries()) expect(persisted).to.include(`\n${key} = ${value}\n`);

      const again = tune('--root', root, '--install-limits', '--install-unit');
      expect(again).not.to.match(/^(set|install)/m);

      tune('--root', root, '--restore');
      expect(kitValues(root)).to.deep.equal(original);
      expect(existsSync(path.join(root, 'etc/sysctl.d/99-ws-gateway.conf'))).to.equal(false);
      expect(existsSync(path.join(root, 'var/lib/ws-gateway/sysctl.restore'))).to.equal(false);
    });

    it('never lowers a limit the host already has higher, here or in /etc/sysctl.d', () => {
      cpSync(here('../../fixtures/proc-tuned'), root, { recursive: true });
      expect(tune('--root', root)).to.match(/^ok {3}fs\.file-max = 3250000$/m);
      expect(readSnapshot(root).sysctl('fs.file-max')).to.deep.equal([3250000]);
      expect(readFileSync(path.join(root, 'etc/sysctl.d/99-ws-gateway.conf'), 'utf8')).to.include('\nfs.file-max = 3250000\n');
    });
  });
});
