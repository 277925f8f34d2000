// tls: what terminating TLS in the workers (--tls-cert/--tls-key) adds to a
// connection, against the same gateway without it: server CPU per handshake,
// handshakes per second (opened by this one process, so a floor), and memory
// per idle connection (OpenSSL's share is outside the V8 heap: see RSS).
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { heldCost, overFirst } from '../held-cost.js';

export async function tls(opts) {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-bench-tls-'));
  const [cert, key] = [join(dir, 'cert.pem'), join(dir, 'key.pem')];
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost'
  ], { stdio: 'ignore' });
  const common = { scenario: 'tls', workers: opts.workers, size: opts.authConnections };
  const runs = [
    await heldCost({ ...common, variant: 'plain ws://', flags: [], url: (server) => server.url }),
    await heldCost({
      ...common,
      variant: 'TLS in the workers, wss:// (ECDSA P-256)',
      flags: ['--tls-cert', cert, '--tls-key', key],
      url: (server) => server.url.replace('ws://', 'wss://'),
      clientOptions: { wsOptions: { rejectUnauthorized: false } } // self-signed, made just now
    })
  ];
  return overFirst(runs, ['cpuUsPerHandshake', 'heapPerConnBytes', 'userRssPerConnBytes']);
}
