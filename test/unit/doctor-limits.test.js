// The doctor's calculations against fixture /proc trees: an untuned 8 GiB
// host (proc-stock), a 32 GiB host after scripts/tune.sh running under the
// unit without nf_conntrack (proc-tuned), and a folder with no /proc at all.
import { expect } from 'chai';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readSnapshot } from '../../lib/runtime/proc.js';
import {
  checkLimits,
  capacityWarnings,
  capacityNote,
  BYTES_PER_CONNECTION,
  BYTES_PER_PROCESS,
  BYTES_NODE_SHARED
} from '../../lib/doctor/limits.js';
import { FD_HEADROOM } from '../../lib/runtime/capacity.js';
import { Status } from '../../lib/doctor/status.js';
import { resolveConfig } from '../../lib/config/options.js';

const fixture = (name) => fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
const STOCK = fixture('proc-stock');
const TUNED = fixture('proc-tuned');

/** { id: result } for a fixture root and a target. */
function check(root, connections, workers, backlog = 65535, balance = 'ip') {
  return Object.fromEntries(checkLimits(readSnapshot(root), { connections, workers, backlog, balance }).map((r) => [r.id, r]));
}

const statuses = (results) => Object.fromEntries(Object.entries(results).map(([id, r]) => [id, r.status]));

describe('doctor limits', () => {
  describe('an untuned host (proc-stock)', () => {
    it('flags the open-files hard limit per worker and the conntrack table for 100k over 4 workers', () => {
      const r = check(STOCK, 100000, 4);
      expect(statuses(r)).to.deep.equal({
        'open-files': Status.FAIL,
        'net.ipv4.tcp_migrate_req': Status.INFO,
        'fs.nr_open': Status.OK,
        'fs.file-max': Status.OK,
        'net.core.somaxconn': Status.WARN,
        'net.ipv4.tcp_max_syn_backlog': Status.WARN,
        'net.ipv4.ip_local_port_range': Status.INFO,
        'net.netfilter.nf_conntrack_max': Status.FAIL,
        'net.ipv4.tcp_mem': Status.OK,
        memory: Status.OK
      });
      // Node raises its soft limit (1024 here) to the hard one (4096).
      expect(r['open-files']).to.include({ current: 4096, needed: 25000 + FD_HEADROOM });
      expect(r['open-files'].detail).to.include('about 3,072 connections, 12,288 in all');
      expect(r['open-files'].fix).to.include(`LimitNOFILE=${25000 + FD_HEADROOM}`);
      // 37 entries are in use already.
      expect(r['net.netfilter.nf_conntrack_max']).to.include({ current: 65536, needed: 100037 });
      expect(r['net.netfilter.nf_conntrack_max'].fix).to.equal('sudo sysctl -w net.netfilter.nf_conntrack_max=100037');
      expect(r['net.core.somaxconn'].fix).to.equal('sudo sysctl -w net.core.somaxconn=65535');
      // 1,184 files open now, plus headroom for the primary and 4 workers.
      expect(r['fs.file-max'].needed).to.equal(100000 + 1184 + 5 * FD_HEADROOM);
    });

    it('runs out of TCP pages and RAM at 1M connections', () => {
      const r = check(STOCK, 1000000, 2);
      expect(r['net.ipv4.tcp_mem']).to.include({ status: Status.FAIL, needed: 1000000 });
      expect(r['net.ipv4.tcp_mem'].current).to.deep.equal([92541, 123390, 185082]);
      expect(r['net.ipv4.tcp_mem'].fix).to.equal('sudo sysctl -w net.ipv4.tcp_mem="92541 1000000 1500000"');
      expect(r.memory.status).to.equal(Status.FAIL);
      // 1M connections plus the primary and 2 workers and Node's shared code, in the report's GiB.
      const needed = ((1e6 * BYTES_PER_CONNECTION + 3 * BYTES_PER_PROCESS + BYTES_NODE_SHARED) / 2 ** 30).toFixed(1);
      expect(r.memory.fix).to.include(`more than ${needed} GiB`);
    });

    it('compares somaxconn with the backlog asked for', () => {
      expect(check(STOCK, 100000, 1, 4096)['net.core.somaxconn'].status).to.equal(Status.OK);
      expect(check(STOCK, 100000, 1, 4097)['net.core.somaxconn'].status).to.equal(Status.WARN);
    });

    it('counts the source addresses a load generator needs', () => {
      expect(check(STOCK, 100000, 4)['net.ipv4.ip_local_port_range'].detail).to.include('28,232 ephemeral ports').and.include('needs 4 source addresses');
      expect(check(STOCK, 1000, 4)['net.ipv4.ip_local_port_range'].detail).to.include('needs 1 source address (');
    });
  });

  describe('--balance reuseport', () => {
    it('checks net.ipv4.tcp_migrate_req: 0 warns with the fix, 1 passes', () => {
      expect(check(STOCK, 1000, 2, 128, 'reuseport')['net.ipv4.tcp_migrate_req']).to.include({
        status: Status.WARN,
        current: 0,
        fix: 'sudo sysctl -w net.ipv4.tcp_migrate_req=1'
      });
      expect(check(TUNED, 1000, 2, 128, 'reuseport')['net.ipv4.tcp_migrate_req']).to.include({ status: Status.OK, current: 1 });
    });
  });

  describe('a tuned host (proc-tuned)', () => {
    it('passes 1M connections over 2 workers, with nf_conntrack not loaded', () => {
      const r = check(TUNED, 1000000, 2);
      for (const result of Object.values(r)) expect([Status.OK, Status.INFO], result.id).to.include(result.status);
      expect(r['net.netfilter.nf_conntrack_max']).to.include({ status: Status.OK, current: 'not loaded' });
    });

    it('warns when TCP would run under memory pressure but not out of pages', () => {
      const r = check(TUNED, 1200000, 2);
      expect(r['net.ipv4.tcp_mem'].status).to.equal(Status.WARN);
      expect(Object.values(r).filter((x) => x.status === Status.FAIL)).to.be.empty;
    });
  });

  describe('missing files', () => {
    let empty;
    before(() => (empty = mkdtempSync(path.join(os.tmpdir(), 'doctor-empty-'))));
    after(() => rmSync(empty, { recursive: true, force: true }));

    it('reports every limit as unknown, conntrack as not loaded, and never throws', () => {
      const r = check(empty, 1000000, 2);
      expect(r['net.netfilter.nf_conntrack_max']).to.include({ status: Status.OK, current: 'not loaded' });
      delete r['net.netfilter.nf_conntrack_max'];
      expect(r['net.ipv4.tcp_migrate_req']).to.include({ status: Status.INFO, current: 'not on this kernel' });
      delete r['net.ipv4.tcp_migrate_req'];
      for (const result of Object.values(r)) {
        expect(result.status, result.id).to.equal(Status.UNKNOWN);
        expect(result.detail).to.equal(`cannot read ${result.source}`);
      }
    });

    it('under --balance reuseport, warns that a kernel without tcp_migrate_req resets queued connections', () => {
      expect(check(empty, 1000, 2, 128, 'reuseport')['net.ipv4.tcp_migrate_req']).to.include({ status: Status.WARN, fix: 'a Linux 5.14+ kernel' });
    });

    it('reads "unlimited" and a meminfo without MemAvailable', () => {
      const root = path.join(empty, 'odd');
      mkdirSync(path.join(root, 'proc', 'self'), { recursive: true });
      writeFileSync(path.join(root, 'proc', 'self', 'limits'), 'Max open files            unlimited            unlimited            files\n');
      writeFileSync(path.join(root, 'proc', 'meminfo'), 'MemTotal:  1024 kB\nMemFree:  512 kB\n');
      expect(readSnapshot(root)).to.deep.include({ openFiles: { soft: Infinity, hard: Infinity }, memory: { total: 1024 * 1024, available: 512 * 1024 } });
    });
  });

  describe('capacityWarnings', () => {
    const config = (given) => resolveConfig({ workers: 2, ...given });

    it('gives one sentence with its fix per limit that caps --max-connections × --workers', () => {
      const warnings = capacityWarnings(config({ maxConnections: 50000 }), { root: STOCK });
      expect(warnings).to.have.length(4);
      expect(warnings[0]).to.match(/^open files per process is 4,096, 51,024 needed for --max-connections 50000 × 2 workers: .*Fix: LimitNOFILE=51024/);
      expect(warnings[1]).to.match(/^net\.core\.somaxconn is 4,096, 65,535 needed for --backlog 65535: .*Fix: sudo sysctl -w net\.core\.somaxconn=65535$/);
      expect(warnings[2]).to.match(/^net\.ipv4\.tcp_max_syn_backlog is 512/);
      expect(warnings[3]).to.match(/^net\.netfilter\.nf_conntrack_max is 65,536, 100,037 needed/);
    });

    it('uses the same checks as the doctor: one warning per WARN or FAIL', () => {
      const cfg = config({ maxConnections: 400000, backlog: 1024 });
      const results = checkLimits(readSnapshot(STOCK), { connections: 800000, workers: 2, backlog: 1024 });
      const flagged = results.filter((r) => r.status === Status.WARN || r.status === Status.FAIL).map((r) => r.label);
      const warnings = capacityWarnings(cfg, { root: STOCK });
      expect(warnings.map((w) => flagged.find((label) => w.startsWith(`${label} is `)))).to.deep.equal(flagged);
    });

    it('warns of nothing when --max-connections is 0, and says what each worker takes', () => {
      expect(capacityWarnings(config({ maxConnections: 0 }), { root: STOCK })).to.deep.equal([]);
      expect(capacityNote(config({ maxConnections: 0 }), { root: STOCK })).to.match(/^each worker takes about 3,072 connections \(its open-files limit less 1024\)/);
      expect(capacityNote(config({ maxConnections: 10 }), { root: STOCK })).to.equal(undefined);
    });

    it('sizes the accept queue to the connections when they are fewer than --backlog', () => {
      // the stock host: somaxconn 4096, tcp_max_syn_backlog 512
      const warnings = capacityWarnings(config({ maxConnections: 1000 }), { root: STOCK });
      expect(warnings).to.have.length(1);
      expect(warnings[0]).to.match(/^net\.ipv4\.tcp_max_syn_backlog is 512, 2,000 needed for all 2,000 connections arriving at once: .*Fix: sudo sysctl -w net\.ipv4\.tcp_max_syn_backlog=2000$/);
    });

    it('is silent on a tuned host', () => {
      expect(capacityWarnings(config({ maxConnections: 50000 }), { root: TUNED })).to.deep.equal([]);
    });
  });
});
