#!/usr/bin/env node
// What the admin page costs the gateway, loopback only, bounded in time:
// the CPU of the primary and its workers (from /proc/<pid>/stat) over
// --seconds, side by side in one run:
// - a gateway without --admin-password, nobody looking;
// - a gateway with it, nobody logged in (the page should cost nothing);
// - the same gateway while one admin watches the page in a real headless
//   Chromium: the requests per second the page makes, their bytes, and the CPU;
// - the page's JSON asked FAST_RATE times a second over plain HTTP, so the
//   CPU of one request stands out of the idle timers' noise (a clock tick
//   is 10 ms, more than one request costs).
// Chromium's own CPU is not counted: it runs on the admin's machine.
//
//   npm run bench:admin -- [--seconds 30] [--json scripts/results/admin.json]
import '../lib/runtime/node-version.js';
import { writeFileSync } from 'node:fs';
import { scriptArgs } from './harness/args.js';
import { chromium } from 'playwright-core';
import { startGateway } from './harness/gateway.js';
import { cpuUsOf } from './bench/proc-sampler.js';

const PASSWORD = 'bench-admin-password';
const FAST_RATE = 20;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

const { values } = scriptArgs({
  usage: '[--seconds 30] [--json scripts/results/admin.json]',
  options: {
    seconds: { type: 'string', default: '30' },
    json: { type: 'string', default: 'scripts/results/admin.json' }
  }
});
const seconds = Number(values.seconds);
if (!(seconds >= 1 && seconds <= 600)) throw new Error('--seconds must be from 1 to 600');

const rows = [];
const plain = await startGateway(['--workers', '2']);
try {
  rows.push({ run: 'no --admin-password, idle', ...(await cpuOver(plain, seconds)) });
} finally {
  await plain.stop();
}

const gw = await startGateway(['--workers', '2'], { env: { GATEWAY_ADMIN_PASSWORD: PASSWORD } });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run'] });
try {
  rows.push({ run: '--admin-password, nobody logged in', ...(await cpuOver(gw, seconds)) });
  const page = await browser.newPage();
  await page.goto(`http://127.0.0.1:${gw.metricsPort}/admin`);
  await page.fill('[name=password]', PASSWORD);
  await page.click('button[type=submit]');
  await page.waitForSelector('#nodes tbody tr');
  const seen = [];
  page.on('requestfinished', async (req) => {
    const sizes = await req.sizes().catch(() => ({ responseBodySize: 0, responseHeadersSize: 0 }));
    seen.push({ path: new URL(req.url()).pathname, bytes: sizes.responseBodySize + sizes.responseHeadersSize });
  });
  const cpu = await cpuOver(gw, seconds);
  const admin = seen.filter((r) => r.path.startsWith('/admin/'));
  rows.push({
    run: 'one admin watching',
    ...cpu,
    requestsPerS: round(admin.length / seconds),
    bytesPerS: Math.round(admin.reduce((sum, r) => sum + r.bytes, 0) / seconds)
  });
  rows.push({ run: `the view asked ${FAST_RATE}/s over HTTP`, ...(await cpuWhilePolling(gw, seconds)) });
} finally {
  await browser.close();
  await gw.stop();
}

console.log(`CPU over ${seconds} s each (ms of CPU per second of wall time):`);
console.table(rows);
const [, idle, , fast] = rows;
const perRequest = (key) => round((fast[key] - idle[key]) / fast.requestsPerS);
console.log(
  `one view request: primary ${perRequest('primaryMsPerS')} ms, workers ${round(perRequest('worker1MsPerS') + perRequest('worker2MsPerS'))} ms of CPU ` +
    '(the fast run less the idle one, per request)'
);
writeFileSync(values.json, `${JSON.stringify({ at: new Date().toISOString(), seconds, rows }, null, 2)}\n`);
console.log(`written to ${values.json}`);

/** The CPU the gateway's processes use over `s` seconds, in ms per second. */
async function cpuOver(gateway, s) {
  const pids = { primary: gateway.proc.pid, worker1: gateway.workerPid(1), worker2: gateway.workerPid(2) };
  const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuUsOf(pid)]));
  const started = performance.now();
  await new Promise((resolve) => setTimeout(resolve, s * 1000));
  const wallS = (performance.now() - started) / 1000;
  const perS = (name) => round((cpuUsOf(pids[name]) - before[name]) / 1000 / wallS);
  return { primaryMsPerS: perS('primary'), worker1MsPerS: perS('worker1'), worker2MsPerS: perS('worker2') };
}

/** The CPU while the page's JSON is asked FAST_RATE times a second, as the page asks it (a channel watched). */
async function cpuWhilePolling(gateway, s) {
  const base = `http://127.0.0.1:${gateway.metricsPort}`;
  const login = await fetch(`${base}/admin/login`, { method: 'POST', headers: { Origin: base }, body: new URLSearchParams({ password: PASSWORD }), redirect: 'manual' });
  const cookie = login.headers.get('set-cookie').split(';', 1)[0];
  let asked = 0;
  let stop = false;
  const polling = (async () => {
    const started = performance.now();
    while (!stop) {
      const res = await fetch(`${base}/admin/api/view?channel=bench&limit=20`, { headers: { cookie } });
      await res.arrayBuffer();
      asked++;
      const ahead = started + (asked * 1000) / FAST_RATE - performance.now();
      if (ahead > 0) await new Promise((resolve) => setTimeout(resolve, ahead));
    }
  })();
  const cpu = await cpuOver(gateway, s);
  stop = true;
  await polling;
  return { ...cpu, requestsPerS: round(asked / s) };
}

function round(x) {
  return Math.round(x * 100) / 100;
}
