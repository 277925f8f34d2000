#!/usr/bin/env node
// A fault in the middle of a connect flood: the load generator ramps
// --connections at --rate from 16 source addresses, and once a quarter are
// held the gateway gets a SIGHUP (rolling restart) or one worker a SIGKILL.
// Reports what the flood saw: connects refused, reset or timed out by reason,
// the connect rate, the handshake p99, and whether every connection is held
// at the end. With --migrate 0|1 (root) it sets net.ipv4.tcp_migrate_req for
// the run and puts the old value back. Loopback only, bounded.
//
//   node scripts/restart-under-load.js [--balance reuseport] [--fault sighup|kill] [--connections 16000] [--rate 2000] [--migrate 1]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { scriptArgs } from './harness/args.js';
import { startGateway, eventually } from './harness/gateway.js';

const MIGRATE = '/proc/sys/net/ipv4/tcp_migrate_req';
const LOADGEN = fileURLToPath(new URL('../bin/loadgen.js', import.meta.url));

const { values } = scriptArgs({
  usage: '[--balance reuseport] [--fault sighup|kill] [--connections 16000] [--rate 2000] [--migrate 1]',
  options: {
    balance: { type: 'string', default: 'reuseport' },
    fault: { type: 'string', default: 'sighup' },
    connections: { type: 'string', default: '16000' },
    rate: { type: 'string', default: '2000' },
    workers: { type: 'string', default: '4' },
    migrate: { type: 'string' }
  }
});
const connections = Math.min(Number(values.connections), 60000);
if (!['sighup', 'kill'].includes(values.fault)) throw new Error('--fault is sighup or kill');

const previous = readFileSync(MIGRATE, 'utf8').trim();
if (values.migrate !== undefined) writeFileSync(MIGRATE, values.migrate);
const gw = await startGateway(['--workers', values.workers, '--balance', values.balance, '--drain-timeout', '2000']);
try {
  const json = path.join(mkdtempSync(path.join(os.tmpdir(), 'restart-under-load-')), 'report.json');
  const load = spawn(process.execPath, [LOADGEN, '--url', gw.url, '--connections', String(connections), '--rate', values.rate, '--local-address', '127.0.0.1-127.0.0.16', '--duration', '5', '--handshake-timeout', '5000', '--json', json], {
    stdio: ['ignore', 'ignore', 'inherit']
  });
  const held = async () => (await (await fetch(`http://127.0.0.1:${gw.metricsPort}/stats`)).json()).totals.connections ?? 0;
  await eventually(async () => (await held()) >= connections / 4, { timeout: 60000, what: 'a quarter of the connections held' });
  if (values.fault === 'sighup') gw.signal('SIGHUP');
  else process.kill(gw.workerPid(1), 'SIGKILL');
  await once(load, 'exit');
  const report = JSON.parse(readFileSync(json, 'utf8'));
  console.log(
    JSON.stringify({
      balance: values.balance,
      fault: values.fault,
      tcpMigrateReq: readFileSync(MIGRATE, 'utf8').trim(),
      target: report.target,
      open: report.open,
      failed: report.failed,
      dropped: report.dropped,
      connectRate: Math.round(report.connectRate),
      handshakeP99Ms: report.handshakeMs.p99
    })
  );
} finally {
  await gw.stop();
  writeFileSync(MIGRATE, previous);
}
