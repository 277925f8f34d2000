// The benchmark's outputs: the JSON with every run, and the Markdown tables
// (one per scenario, a ratio to the plain ws baseline where there is one, and
// the issue's targets marked met or missed).
import { writeFileSync, mkdirSync } from 'node:fs';
import path from 'node:path';

/** Column titles for the figures, in the order they are shown. */
const TITLES = {
  result: 'result',
  workerRssMB: 'worker RSS (MB)',
  workerPrivateMB: 'of which private (MB)',
  userRssPerConnBytes: 'user RSS/conn (B)',
  primaryRssPerConnBytes: 'of which primary (B)',
  heapPerConnBytes: 'heap/conn (B)',
  kernelPerSocketBytes: 'kernel/socket (B)',
  kernelTcpMemPerSocketBytes: 'TCP mem/socket (B)',
  kernelSlabPerSocketBytes: 'slab/socket (B)',
  kernelSocketCachesPerSocketBytes: 'socket caches/socket (B)',
  socketsSeen: 'sockets seen',
  serverRssMiB: 'server RSS (MiB)',
  connectsPerSec: 'connects/s',
  cpuUsPerHandshake: 'CPU µs/handshake',
  primaryUsPerHandshake: 'primary µs',
  workersUsPerHandshake: 'workers µs',
  handshakeP99Ms: 'handshake p99 (ms)',
  churnCpuUsPerHandshake: 'CPU µs/handshake, steady churn',
  publishes: 'publishes',
  deliveriesPerSec: 'deliveries/s',
  cpuUsPerDelivery: 'CPU µs/delivery',
  primaryUsPerDelivery: 'primary µs/delivery',
  latencyP50Ms: 'latency p50 (ms)',
  latencyP99Ms: 'p99 (ms)',
  latencyMaxMs: 'max (ms)',
  publishesPerSec: 'publishes/s',
  sequencedPerSec: 'sequenced/s',
  primaryCpuUsPerPublish: 'primary CPU µs/publish',
  loadedP50Ms: 'under load p50 (ms)',
  loadedP99Ms: 'under load p99 (ms)',
  publishesVsMemory: 'publishes/s ÷ memory',
  loadedP99VsMemory: 'p99 under load ÷ memory',
  redisCpuUsPerPublish: 'redis-server CPU µs/publish',
  redisCallsPerPublish: 'Redis calls/publish',
  redisScriptUsPerPublish: 'script µs/publish (commandstats)',
  pingsPerSec: 'pings/s',
  workerCpuUsPerPing: 'worker CPU µs/ping',
  workerCpuMsPerS: 'worker CPU ms/s',
  eventLoopP99Ms: 'event loop p99 (ms)',
  eventLoopMaxMs: 'event loop max (ms)',
  probeMaxMs: 'probe answer max (ms)',
  probeP99Ms: 'probe answer p99 (ms)',
  cpuUsPerClose: 'CPU µs/close',
  manualGcs: 'manual GCs',
  manualPauseP99Ms: 'manual pause p99 (ms)',
  autoGcs: 'V8 GCs',
  autoPauseP99Ms: 'V8 pause p99 (ms)',
  pauseMaxMs: 'GC pause max (ms)',
  extraCpuUsPerHandshake: 'CPU µs/conn over the first',
  extraHeapPerConnBytes: 'heap/conn over the first (B)',
  extraUserRssPerConnBytes: 'user RSS/conn over the first (B)',
  ratioUserRssPerConnBytes: 'user RSS/conn ÷ the first',
  ratioCpuUsPerHandshake: 'CPU µs/handshake ÷ the first',
  extraChurnCpuUsPerHandshake: 'CPU µs/handshake in churn over the first',
  ratioChurnCpuUsPerHandshake: 'CPU µs/handshake in churn ÷ the first',
  ratioCpuUsPerDelivery: 'CPU µs/delivery ÷ the first',
  subscribesPerSec: 'subscribes/s',
  primaryHeapPerChannelBytes: 'primary heap/channel (B)',
  primaryRssPerChannelBytes: 'primary RSS/channel (B)',
  primaryHeapPerMessageBytes: 'primary heap/message (B)',
  historyBytesCounted: 'history bytes counted',
  primaryHeapUsedMiB: 'primary heap (MiB)',
  primaryHeapHeadroomMiB: 'primary heap headroom (MiB)',
  p50Ms: 'p50 (ms)',
  p99Ms: 'p99 (ms)',
  maxMs: 'max (ms)',
  replayedPerSec: 'replayed/s',
  perWorker: 'connections per worker',
  busiestVsMean: 'busiest / mean'
};

/** The figures each scenario compares with the plain ws baseline (lower is better). */
const VERSUS_WS = {
  idle: ['userRssPerConnBytes'],
  handshake: ['cpuUsPerHandshake', 'churnCpuUsPerHandshake'],
  'fan-out': ['cpuUsPerDelivery'],
  keepalive: ['eventLoopMaxMs'],
  'mass-close': ['cpuUsPerClose', 'probeMaxMs']
};

/** The issue's targets: goals to report against, not assertions. */
const TARGETS = [
  { goal: 'idle ≤ 4 KiB user RSS per connection', scenario: /^idle/, variant: 'gateway', figure: 'userRssPerConnBytes', met: (v) => v <= 4096 },
  { goal: 'handshake ≤ 150 µs server CPU (sticky primary)', scenario: /^handshake$/, variant: 'gateway', figure: 'cpuUsPerHandshake', met: (v) => v <= 150 },
  { goal: 'handshake ≤ 2× plain ws server CPU (sticky primary)', scenario: /^handshake$/, variant: 'gateway', ratio: 'cpuUsPerHandshake', met: (v) => v <= 2 },
  { goal: 'handshake ≤ 1.3× plain ws server CPU (--balance reuseport)', scenario: /^handshake$/, variant: 'gateway-reuseport', ratio: 'cpuUsPerHandshake', met: (v) => v <= 1.3 },
  { goal: 'handshake in steady churn ≤ 1.1× plain ws server CPU (--balance reuseport)', scenario: /^handshake$/, variant: 'gateway-reuseport', ratio: 'churnCpuUsPerHandshake', met: (v) => v <= 1.1 },
  { goal: 'fan-out CPU per delivery ≤ 1.0× plain ws', scenario: /^fan-out$/, variant: 'gateway', ratio: 'cpuUsPerDelivery', met: (v) => v <= 1 },
  { goal: 'keepalive stall ≤ 10 ms', scenario: /^keepalive$/, variant: 'gateway', figure: 'eventLoopMaxMs', met: (v) => v <= 10 },
  { goal: 'auth ≤ 200 B heap per idle authenticated connection over none', scenario: /^auth$/, variant: 'handshake + auth, HS256', figure: 'extraHeapPerConnBytes', met: (v) => v <= 200 },
  { goal: 'channels ≤ 200 B primary heap per routed channel', scenario: /^channels$/, variant: 'gateway, routed channels without history', figure: 'primaryHeapPerChannelBytes', met: (v) => v <= 200 },
  { goal: 'mass-close stall ≤ 100 ms', scenario: /^mass-close$/, variant: 'gateway', figure: 'eventLoopMaxMs', met: (v) => v <= 100 },
  { goal: 'mass-close: slowest probe answer on the same worker ≤ 100 ms', scenario: /^mass-close$/, variant: 'gateway', figure: 'probeMaxMs', met: (v) => v <= 100 },
  { goal: 'worker ≤ 45 MB RSS at zero connections', scenario: /^base-memory$/, variant: 'gateway worker', figure: 'workerRssMB', met: (v) => v <= 45 },
  { goal: 'Pusher idle ≤ 1.1× native user RSS per connection', scenario: /^pusher: idle/, variant: 'gateway, Pusher', figure: 'ratioUserRssPerConnBytes', met: (v) => v <= 1.1 },
  { goal: 'Pusher handshake ≤ 1.1× native server CPU', scenario: /^pusher: handshake$/, variant: 'gateway, Pusher', figure: 'ratioCpuUsPerHandshake', met: (v) => v <= 1.1 },
  { goal: 'Pusher fan-out ≤ 1.1× native CPU per delivery', scenario: /^pusher: fan-out$/, variant: 'gateway, Pusher', figure: 'ratioCpuUsPerDelivery', met: (v) => v <= 1.1 },
  { goal: 'Ably idle ≤ 1.1× native user RSS per connection', scenario: /^ably: idle/, variant: 'gateway, Ably', figure: 'ratioUserRssPerConnBytes', met: (v) => v <= 1.1 },
  { goal: 'Ably handshake ≤ 1.2× native server CPU', scenario: /^ably: handshake$/, variant: 'gateway, Ably', figure: 'ratioCpuUsPerHandshake', met: (v) => v <= 1.2 },
  { goal: 'Ably fan-out ≤ 1.1× native CPU per delivery', scenario: /^ably: fan-out$/, variant: 'gateway, Ably', figure: 'ratioCpuUsPerDelivery', met: (v) => v <= 1.1 },
  { goal: 'Redis engine ≥ 0.8× the memory engine\'s publishes/s', scenario: /^redis$/, variant: 'gateway --engine redis', figure: 'publishesVsMemory', met: (v) => v >= 0.8 },
  { goal: 'Redis engine p99 under load ≤ 1.5× the memory engine\'s', scenario: /^redis$/, variant: 'gateway --engine redis', figure: 'loadedP99VsMemory', met: (v) => v <= 1.5 },
  { goal: 'redis-server CPU ≤ 8 µs per publish', scenario: /^redis$/, variant: 'gateway --engine redis', figure: 'redisCpuUsPerPublish', met: (v) => v <= 8 },
  { goal: 'relay ≥ 400k publishes/s', scenario: /^relay$/, variant: 'primary relay, batched', figure: 'publishesPerSec', met: (v) => v >= 400000 }
];

/** Writes latest.json and latest.md under `dir`; returns the Markdown. */
export function writeReport(dir, { meta, runs }) {
  mkdirSync(dir, { recursive: true });
  const targets = targetRows(runs);
  writeFileSync(path.join(dir, 'latest.json'), JSON.stringify({ meta, targets, runs }, null, 2) + '\n');
  const md = markdown(meta, runs, targets);
  writeFileSync(path.join(dir, 'latest.md'), md);
  return md;
}

function targetRows(runs) {
  return TARGETS.map(({ goal, scenario, variant, figure, ratio, met }) => {
    const rows = runs.filter((r) => scenario.test(r.scenario) && r.variant === variant);
    if (rows.length === 0) return { goal, status: 'not run' };
    const short = rows.find((r) => r.status !== 'ok');
    if (short) return { goal, status: 'SHORT', where: `${short.scenario}: ${short.short}` };
    const values = rows.map((r) => (ratio ? versus(runs, r, ratio) : r.figures[figure]));
    if (values.some((v) => v === undefined)) return { goal, status: 'SHORT', where: 'the baseline run fell short' };
    const worst = values.every((v) => met(v)) ? values[0] : values.find((v) => !met(v));
    return { goal, measured: worst, where: rows.map((r) => r.scenario).join(', '), status: values.every((v) => met(v)) ? 'met' : 'missed' };
  });
}

/** The run's figure divided by the plain ws run's in the same scenario. */
function versus(runs, run, figure) {
  const base = runs.find((r) => r.scenario === run.scenario && r.variant === 'ws' && r.status === 'ok');
  const value = run.figures?.[figure];
  return base && value !== undefined && base.figures[figure] > 0 ? Math.round((value / base.figures[figure]) * 100) / 100 : undefined;
}

function markdown(meta, runs, targets) {
  const out = [
    `Measured ${meta.date} on ${meta.machine}; \`${meta.command}\` (${meta.durationS} s).`,
    '',
    '| target | measured | status |',
    '|---|---|---|',
    ...targets.map((t) => `| ${t.goal} | ${t.measured ?? ''} ${t.where ? `(${t.where})` : ''} | ${t.status} |`),
    ''
  ];
  for (const scenario of [...new Set(runs.map((r) => r.scenario))]) {
    const rows = runs.filter((r) => r.scenario === scenario);
    const found = Object.keys(TITLES).filter((k) => rows.some((r) => r.figures?.[k] !== undefined));
    const keys = found.length > 0 ? found : ['result'];
    const versusWs = rows.some((r) => r.variant === 'ws') ? (VERSUS_WS[scenario.split(' ')[0]] ?? []).filter((k) => keys.includes(k)) : [];
    out.push(`### ${scenario}`, '');
    out.push(`| variant | size | ${[...keys.map((k) => TITLES[k]), ...versusWs.map((k) => `${TITLES[k]} vs ws`)].join(' | ')} |`);
    out.push(`|---|---|${[...keys, ...versusWs].map(() => '---|').join('')}`);
    for (const r of rows) {
      const cells = r.status === 'ok' ? keys.map((k) => r.figures[k] ?? '') : ['SHORT', ...keys.slice(1).map(() => '')];
      const ratios = versusWs.map((k) => (r.status === 'ok' ? `${versus(runs, r, k) ?? ''}×` : ''));
      out.push(`| ${r.variant} | ${r.size ?? ''} | ${[...cells, ...ratios].join(' | ')} |`);
    }
    out.push('', ...rows.filter((r) => r.status !== 'ok').map((r) => `SHORT, ${r.variant}: ${r.short}  `), '');
  }
  return out.join('\n');
}
