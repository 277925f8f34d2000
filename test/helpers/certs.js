// A self-signed certificate for 127.0.0.1 and localhost, made at test time
// with the openssl command line (node:crypto cannot issue X.509 certificates).
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** @returns {{certPath: string, keyPath: string, cert: Buffer}} */
export function selfSignedCert() {
  const dir = mkdtempSync(join(tmpdir(), 'gateway-tls-'));
  const certPath = join(dir, 'cert.pem');
  const keyPath = join(dir, 'key.pem');
  execFileSync('openssl', [
    'req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', keyPath, '-out', certPath, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1,DNS:localhost'
  ], { stdio: 'ignore' });
  return { certPath, keyPath, cert: readFileSync(certPath) };
}
