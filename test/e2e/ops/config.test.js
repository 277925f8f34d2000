import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { options, resolveConfig } from '../../../lib/config/options.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const run = (args, env = {}) =>
  spawnSync(process.execPath, [GATEWAY, ...args], { encoding: 'utf8', env: { ...process.env, ...env }, timeout: 10000 });

describe('options table', () => {
  it('has help text for every option and the defaults the README promises', () => {
    for (const [name, spec] of Object.entries(options)) expect(spec.describe, name).to.be.a('string').and.not.empty;
    const config = resolveConfig({});
    expect(config).to.include({
      port: 8080,
      host: '0.0.0.0',
      backlog: 65535,
      balance: 'ip',
      path: '/ws',
      pingInterval: 25000,
      gcInterval: 0,
      maxConnections: 0,
      maxPayload: 65536,
      maxSubscriptions: 100,
      maxPublishRate: 100,
      maxBuffered: 1048576,
      drainTimeout: 30000,
      metricsPort: 9091,
      metricsHost: '127.0.0.1',
      maxSemiSpaceSize: 2,
      engine: 'memory',
      redisUrl: 'redis://127.0.0.1:6379',
      logLevel: 'info',
      hookTimeout: 1000,
      hookConcurrency: 64,
      hookQueue: 10000
    });
    expect(config.workers).to.be.at.least(1);
    expect(config.apiKey).to.equal(undefined);
  });

  it('refuses values out of range with a message naming the flag', () => {
    expect(() => resolveConfig({ port: 70000 })).to.throw('--port must be at most 65535');
    expect(() => resolveConfig({ workers: 0 })).to.throw('--workers must be at least 1');
    expect(() => resolveConfig({ pingInterval: 1.5 })).to.throw('--ping-interval must be an integer');
    expect(() => resolveConfig({ balance: 'random' })).to.throw('--balance must be one of ip, even');
    expect(() => resolveConfig({ path: 'ws' })).to.throw('--path must start with /');
  });

  it('splits --allowed-origins into a list', () => {
    expect(resolveConfig({ allowedOrigins: 'https://a.example, https://b.example' }).allowedOrigins).to.deep.equal([
      'https://a.example',
      'https://b.example'
    ]);
  });
});

describe('gateway command line', () => {
  for (const [args, message] of [
    [['--port', 'abc'], '--port must be a number, got abc (an integer from 0 to 65535)'],
    [['--port=abc'], '--port must be a number, got abc (an integer from 0 to 65535)'],
    [['--port', '-1'], '--port must be at least 0, got -1 (an integer from 0 to 65535)'],
    [['--port', '1', '--port', 'abc'], '--port is given 2 times (1, abc): give it once'],
    [['--balance', 'nope'], '--balance must be one of ip, even, reuseport, got nope'],
    [['--no-such-flag'], 'unknown option --no-such-flag\n'],
    [['--prot', '80'], 'unknown option --prot: did you mean --port?'],
    [['--max-conections', '5'], 'unknown option --max-conections: did you mean --max-connections?'],
    [['--no-trust-forwarder'], 'unknown option --no-trust-forwarder: did you mean --trust-forwarded?'],
    [['--max-payload'], 'max-payload'],
    [['--auth', 'jwt'], '--auth jwt needs a key'],
    [['--auth', 'jwt', '--jwt-secret', 's'.repeat(32), '--jwt-jwks-url', 'http://127.0.0.1/jwks'], 'give one JWT key'],
    [['--auth', 'jwt', '--jwt-secret', 'short'], '--jwt-secret must be at least 32 characters'],
    [['--auth', 'jwt', '--jwt-public-key', 'package.json'], 'is not a PEM public key'],
    [['--auth', 'jwt', '--jwt-jwks-url', 'file:///etc/passwd'], '--jwt-jwks-url must be an http:// or https:// URL'],
    [['--jwt-secret', 's'.repeat(32)], '--jwt-secret needs --auth jwt'],
    [['--max-conns-per-user', '2'], '--max-conns-per-user needs --auth jwt or hook'],
    [['--auth', 'hook'], '--auth hook and --connect-hook go together'],
    [['--connect-hook', 'http://127.0.0.1:1/c'], '--auth hook and --connect-hook go together'],
    [['--auth', 'hook', '--connect-hook', 'ftp://x/c'], '--connect-hook must be an http:// or https:// URL'],
    [['--auth', 'hook', '--connect-hook', 'http://127.0.0.1:1/c', '--jwt-secret', 's'.repeat(32)], '--jwt-secret needs --auth jwt'],
    [['--refresh-hook', 'http://127.0.0.1:1/r'], '--refresh-hook needs --auth hook'],
    [['--tls-cert', 'package.json'], '--tls-cert and --tls-key go together'],
    [['--tls-cert', 'no-such.pem', '--tls-key', 'package.json'], '--tls-cert no-such.pem: ENOENT'],
    [['--tls-cert', 'package.json', '--tls-key', 'package.json'], '--tls-cert package.json with --tls-key package.json:'],
    [['--admin-password', 'too-short'], '--admin-password must be at least 12 characters'],
    [['--admin-password', 'long-enough-password', '--metrics-port', '0'], '--admin-password needs the metrics listener'],
    [['--engine', 'kafka'], 'engine'],
    [['--join-leave-interval', '0'], '--join-leave-interval must be at least 1'],
    [['--join-leave-interval', '-5'], '--join-leave-interval must be at least 1'],
    [['--join-leave-interval', '60001'], '--join-leave-interval must be at most 60000'],
    [['--write-delay', '-1'], '--write-delay must be at least 0'],
    [['--write-delay', '1001'], '--write-delay must be at most 1000'],
    [['--engine', 'redis', '--redis-url', 'http://127.0.0.1:6379'], '--redis-url must be a redis:// or rediss:// URL']
  ]) {
    it(`exits 2 with a message for ${args.join(' ')}`, () => {
      const result = run(args);
      expect(result.status).to.equal(2);
      expect(result.stderr).to.include(message);
      expect(result.stderr).not.to.match(/\n\s+at /); // no stack trace
    });
  }

  it('reads GATEWAY_* environment variables, checked like flags, an error naming the variable and its text', () => {
    const result = run([], { GATEWAY_MAX_PAYLOAD: '3' });
    expect(result.status).to.equal(2);
    expect(result.stderr).to.include('--max-payload (from GATEWAY_MAX_PAYLOAD) must be at least 16, got 3 (an integer from 16 to 1073741824)');
    expect(run([], { GATEWAY_PORT: 'abc' }).stderr).to.include('--port (from GATEWAY_PORT) must be a number, got abc');
  });

  it('names where a dependent option alone came from, and the option it needs', () => {
    const alone = run([], { GATEWAY_PUSHER_SECRET: 's'.repeat(24) });
    expect(alone.status).to.equal(2);
    expect(alone.stderr).to.include('--pusher-secret (from GATEWAY_PUSHER_SECRET) needs --pusher-app-id');
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-config-'));
    try {
      const file = path.join(dir, 'gateway.json');
      writeFileSync(file, JSON.stringify({ webhookUrl: 'http://127.0.0.1:1/hooks' }));
      const fromFile = run(['--config', file]);
      expect(fromFile.status).to.equal(2);
      expect(fromFile.stderr).to.include(`--webhook-url (from webhookUrl in ${file}) needs --webhook-secret`);
      // the command line names the flag alone
      expect(run(['--webhook-url', 'http://127.0.0.1:1/hooks']).stderr).to.include('error: --webhook-url needs --webhook-secret');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints help with every option', () => {
    const result = run(['--help']);
    expect(result.status).to.equal(0);
    for (const name of Object.keys(options)) expect(result.stdout).to.include(`--${name}`);
  });
});
