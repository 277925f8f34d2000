#!/usr/bin/env node
// Soak and chaos: the real gateway under the real load generator for
// --minutes, with faults on a schedule (worker SIGKILLs, a SIGHUP rolling
// restart, hostile input, reconnect storms, a Redis restart). Writes soak.jsonl (a line every
// --sample-every s), summary.json and plot.html into --out, prints the
// verdict, and exits 0 only if every criterion held (scripts/soak/verdict.js).
//   npm run soak -- --minutes 30 [--connections C] [--workers W] [--auth jwt] [--engine redis [--redis-url U]]
import '../lib/runtime/node-version.js'; // first: an unsupported Node stops here, with one line
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { soakOptions } from './soak/options.js';
import { startHolders, churn } from './soak/loadgens.js';
import { Sampler } from './soak/sampler.js';
import { Faults } from './soak/faults.js';
import { judge, mib } from './soak/verdict.js';
import { plotHtml } from './soak/plot.js';
import { track } from './bench/children.js';
import { startGateway, eventually } from './harness/gateway.js';
import { RedisServer } from './harness/redis.js';

const LATE_S = 120; // past --minutes, loadgens still running are killed
// The gateway's default, passed so that the end of the run knows how long a
// SIGHUP's drain may take: up to this (and the supervisor's grace) per slot.
const DRAIN_TIMEOUT_MS = 30000;
const EXIT_GRACE_MS = 5000;

const o = soakOptions(process.argv.slice(2));
mkdirSync(o.out, { recursive: true });
const log = (line) => process.stderr.write(`[soak ${new Date().toISOString().slice(11, 19)}] ${line}\n`);

const apiKey = randomBytes(16).toString('hex');
// Under --auth jwt the loadgens sign their tokens with the gateway's secret; forged ones meet the real verifier.
const jwtSecret = o.auth === 'jwt' ? randomBytes(32).toString('hex') : undefined;
const flags = ['--host', '127.0.0.1', '--workers', String(o.workers), '--drain-timeout', String(DRAIN_TIMEOUT_MS), '--api-key', apiKey, '--gc-interval', String(o.gcInterval), '--engine', o.engine];
if (jwtSecret) flags.push('--auth', 'jwt', '--jwt-secret', jwtSecret);
// A Redis of its own can be restarted mid-run; one it was given is left alone.
const redis = o.engine === 'redis' && !o.redisUrl ? await RedisServer.start() : undefined;
if (redis) track(redis.proc);
if (o.engine === 'redis') flags.push('--redis-url', o.redisUrl ?? redis.url);
if (o.redisUrl) log(`--redis-url ${o.redisUrl} was not started by the soak: no Redis restart is injected`);
const gateway = await startGateway(flags, { timeout: 30000 });
track(gateway.proc);
log(`gateway on ${gateway.url}, metrics on ${gateway.metricsPort}; ${o.minutes} min; files in ${o.out}`);
log(`size: ${o.workers} workers, ${o.connections} connections, ${o.sseStreams} SSE streams (this machine's defaults: ${o.sizing})`);

const startedAt = new Date().toISOString();
const loadgens = startHolders(gateway, o, { apiKey, jwtSecret });
const sampler = new Sampler({ metricsPort: gateway.metricsPort, file: path.join(o.out, 'soak.jsonl'), everyS: o.sampleEvery, loadgens });
sampler.start();
const faults = new Faults({ gateway, o, log, redis });
faults.start();
let stopped = false;
const churning = churn(gateway, o, { jwtSecret }, () => stopped);
const late = setTimeout(() => loadgens.forEach((l) => l.stop()), (o.durationS + LATE_S) * 1000);

const reports = Object.fromEntries(await Promise.all(loadgens.map(async (l) => [l.name, await l.report()])));
clearTimeout(late);
stopped = true;
faults.stop();
const churned = await churning;
if (gateway.proc.exitCode === null) await settled();
sampler.write();
sampler.stop();
const primaryAlive = gateway.proc.exitCode === null && gateway.proc.signalCode === null;
const recoveries = primaryAlive ? await recoveriesByResult(gateway) : {};
await gateway.stop();
await redis?.remove();

const verdict = judge({
  samples: sampler.samples,
  reports,
  logs: gateway.logs,
  killedPids: faults.killedPids,
  primaryAlive,
  warmupS: o.warmupS,
  slots: o.workers,
  redisRestarts: faults.counts.redisRestarts
});
const ws = reports.ws;
const faultCounts = { ...faults.counts, reconnectStorms: o.reconnectEvery > 0 ? Math.floor(o.durationS / o.reconnectEvery) : 0, reconnected: (ws.reconnects ?? 0) + (reports.sse?.reconnects ?? 0) };
const line =
  `soak ${o.minutes} min, ${o.workers} workers, auth ${o.auth}, engine ${o.engine}, gc-interval ${o.gcInterval}: held ${ws.open ?? 0} WebSockets` +
  (reports.sse ? ` + ${reports.sse.open ?? 0} SSE` : '') +
  `; published ${(ws.published ?? 0) + (reports.sse?.published ?? 0)} (ws ${ws.published ?? 0}, http ${reports.sse?.published ?? 0}); ` +
  `ws ${losses(ws)}` +
  (reports.sse ? `; SSE ${losses(reports.sse)}` : '') +
  '; ' +
  `faults: ${faultCounts.workerKills} kills, ${faultCounts.rollingRestarts} SIGHUP, ${faultCounts.hostileBursts} hostile bursts, ${faultCounts.redisRestarts} Redis restarts, ${faultCounts.reconnected} reconnects; ` +
  `churn ${churned.runs} runs (${churned.opened} connections); worst stall ${verdict.worstStall.ms} ms (worker ${verdict.worstStall.worker} at ${verdict.worstStall.t} s)`;
const summary = { startedAt, options: o, line, verdict, faults: faultCounts, recoveries, hostile: faults.hostile, churn: churned, reports, samples: sampler.samples.length };
writeFileSync(path.join(o.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
writeFileSync(path.join(o.out, 'plot.html'), plotHtml(sampler.samples, summary));

process.stdout.write(`${line}\n`);
for (const f of verdict.fits.filter((f) => f.points > 0)) {
  process.stdout.write(`  worker ${f.worker} pid ${f.pid}: heap ${mib(f.heapSlope)} MiB/h, RSS ${mib(f.rssSlope)} MiB/h, fds beyond connections ${Math.round(f.fdsSlope)}/h over ${f.points} samples\n`);
}
process.stdout.write(`  primary: heap less history ${mib(verdict.primary.heapSlope)} MiB/h, RSS ${mib(verdict.primary.rssSlope)} MiB/h, channels ${Math.round(verdict.primary.channelsSlope)}/h\n`);
for (const u of verdict.unjudged) process.stdout.write(`  not judged: ${u}\n`);
process.stdout.write(verdict.ok ? `PASS (${verdict.checks.length} checks); files in ${o.out}\n` : `FAIL:\n${verdict.failed.map((f) => `  ${f}`).join('\n')}\nfiles in ${o.out}\n`);
process.exitCode = verdict.ok ? 0 : 1;

function losses(r) {
  return `lost ${r.lost}, gaps ${r.seqGaps}, out of order ${r.outOfOrder}, recovered ${r.recovered}, unrecoverable ${r.unrecoverable}`;
}

/**
 * Waits, up to what the drains may take, for a SIGHUP's rolling restart to end
 * and for one worker per slot (a killed one's replacement started, a drained
 * one gone), so the last sample shows the gateway as it settles, not mid-drain.
 */
async function settled() {
  const deadline = Date.now() + o.workers * (DRAIN_TIMEOUT_MS + EXIT_GRACE_MS) + 10000;
  try {
    if (faults.counts.rollingRestarts > 0) await gateway.waitForLog((l) => l.msg === 'rolling restart done', deadline - Date.now());
    await eventually(
      async () => {
        await sampler.poll();
        const slots = (sampler.latest?.workers ?? []).map((w) => w.worker);
        return slots.length === o.workers && new Set(slots).size === o.workers;
      },
      { timeout: Math.max(0, deadline - Date.now()), interval: 500, what: 'one worker per slot' }
    );
  } catch (err) {
    log(`not settled: ${err.message}`); // the verdict's last sample shows what was left
  }
}

/** The workers alive at the end: their recoveries by result (a killed worker's counts are gone with it). */
async function recoveriesByResult(gw) {
  const out = {};
  for (const m of (await gw.metrics().catch(() => '')).matchAll(/^gateway_recoveries_total\{result="(\w+)"\} (\d+)/gm)) out[m[1]] = Number(m[2]);
  return out;
}
