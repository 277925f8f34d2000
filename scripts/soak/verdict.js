// The soak's verdict: every criterion, its figure and its bound, and which
// failed; and what the run was too short to judge. Exit 0 only if all judged pass.
import { slopePerHour } from './slope.js';

const MiB = 1048576;

// A worker's heap and descriptors are flat when the fitted slope after the
// warm-up is below the bound per hour, or when the fitted growth over the
// window is within the noise floor (a short window cannot resolve a slope).
export const BOUNDS = {
  heapPerHour: 16 * MiB,
  heapFloor: (mean) => Math.max(16 * MiB, mean * 0.1),
  fdsPerHour: 100,
  // Descriptors beyond the connections (listeners, IPC, files, and any socket
  // left behind): churn moves both together, a leak only the difference.
  fdsFloor: (meanConnections) => Math.max(100, meanConnections * 0.05),
  // The primary holds a few hundred bytes of state per channel, plus history.
  primaryHeapPerHour: 16 * MiB,
  primaryBytesPerChannel: 2048
};
const MIN_POINTS = 4;
// A slope over less than this is the GC's sawtooth, not a trend: a one-minute
// run's seven samples "grow" by whatever the last collection left. Shorter
// windows are reported as too short to judge, neither passed nor failed.
export const MIN_WINDOW_S = 600;

/**
 * @param {object} run
 * @param {object[]} run.samples the JSON lines
 * @param {object[]} run.reports the loadgens' reports, by name
 * @param {object[]} run.logs the gateway's log lines
 * @param {Set<number>} run.killedPids
 * @param {boolean} run.primaryAlive
 * @param {number} run.warmupS
 * @param {number} run.slots the gateway's --workers
 * @param {number} [run.redisRestarts] Redis restarts injected (each gives every channel a new epoch)
 */
export function judge({ samples, reports, logs, killedPids, primaryAlive, warmupS, slots, redisRestarts = 0 }) {
  const checks = [];
  const check = (name, ok, detail) => checks.push({ name, ok, detail });
  const unjudged = [];

  for (const [name, r] of Object.entries(reports)) {
    if (r.error) {
      check(`loadgen ${name} report`, false, r.error);
      continue;
    }
    // The WebSockets and the SSE streams both re-dial and recover.
    if (redisRestarts === 0) check(`lost = 0 (${name})`, r.lost === 0, `lost ${r.lost}, received ${r.received} of ${r.expected}`);
    // An ack without recovered: true (a stream's `event: gap`) after a reconnect: what was missed is gone.
    // After a Redis restart a recovery across it is answered in the new epoch: the documented answer, not a loss
    // (whose count `lost` then holds too, unseparated: a message carries no epoch, so lost is not judged).
    const excused = redisRestarts > 0 ? r.epochChanged : 0;
    check(`every recovery recovered (${name})`, r.unrecoverable - excused === 0,
      `unrecoverable ${r.unrecoverable} of ${r.reconnects} reconnects, ${r.epochChanged} in a new epoch${redisRestarts > 0 ? ' (excused: Redis restarted)' : ''}`);
    // What was published after the restart reached the held subscribers: each saw its channel start over at seq 1 (and no gap).
    if (redisRestarts > 0) check(`the new epoch reached the subscribers (${name})`, r.seqRestarts > 0, `${r.seqRestarts} subscribers saw seq start over`);
    check(`no seq gap (${name})`, r.seqGaps === 0, `gaps ${r.seqGaps}`);
    check(`out of order = 0 (${name})`, r.outOfOrder === 0, `out of order ${r.outOfOrder}`);
  }

  // A worker the supervisor lost track of (two for one slot) would hold its clients for good.
  const last = samples.at(-1)?.workers ?? [];
  check('one worker per slot at the end', last.length === slots, `${last.length} workers reporting for ${slots} slots: ${last.map((w) => `${w.worker}/pid ${w.pid}`).join(', ')}`);

  const died = logs.filter((l) => l.msg === 'worker died');
  const unexpected = died.filter((l) => !killedPids.has(l.workerPid));
  check('no restart but the killed', unexpected.length === 0 && primaryAlive, `${died.length} workers died, ${killedPids.size} killed on purpose; unexpected: ${unexpected.map((l) => `pid ${l.workerPid} (${l.signal ?? l.code})`).join(', ') || 'none'}; primary ${primaryAlive ? 'alive' : 'GONE'}`);

  const fits = workerFits(samples, warmupS);
  const judgeable = (f) => f.points >= MIN_POINTS && f.hours * 3600 >= MIN_WINDOW_S;
  // The run's own window after the warm-up bounds every fit's.
  const runWindowS = Math.max(0, (samples.at(-1)?.t ?? 0) - warmupS);
  const tooShort = runWindowS < MIN_WINDOW_S;
  if (tooShort) unjudged.push(`heap, fds and primary memory slopes: too short to judge (${Math.round(runWindowS)} s after the warm-up, ${MIN_WINDOW_S} s needed)`);
  for (const f of tooShort ? [] : fits) {
    if (!judgeable(f)) continue; // a late replacement's short life, like the warm-up, says nothing
    const heapFloor = BOUNDS.heapFloor(f.meanHeap);
    const fdsFloor = BOUNDS.fdsFloor(f.meanConnections);
    check(`worker ${f.worker} pid ${f.pid} heap flat`, f.heapSlope <= BOUNDS.heapPerHour || f.heapSlope * f.hours <= heapFloor,
      `${mib(f.heapSlope)} MiB/h over ${f.points} samples (bound ${mib(BOUNDS.heapPerHour)} MiB/h, or growth ${mib(f.heapSlope * f.hours)} <= ${mib(heapFloor)} MiB)`);
    check(`worker ${f.worker} pid ${f.pid} fds flat`, f.fdsSlope <= BOUNDS.fdsPerHour || f.fdsSlope * f.hours <= fdsFloor,
      `${Math.round(f.fdsSlope)} fds beyond connections /h (bound ${BOUNDS.fdsPerHour}/h, or growth ${Math.round(f.fdsSlope * f.hours)} <= ${Math.round(fdsFloor)})`);
  }
  if (!tooShort && !fits.some(judgeable)) check('worker slopes fitted', false, `no worker has ${MIN_POINTS} samples over ${MIN_WINDOW_S} s after the warm-up`);

  const p = primaryFit(samples, warmupS);
  if (!tooShort && p.points >= MIN_POINTS) {
    const allowed = BOUNDS.primaryHeapPerHour + BOUNDS.primaryBytesPerChannel * Math.max(0, p.channelsSlope);
    const floor = BOUNDS.heapFloor(p.meanHeap);
    check('primary memory tracks channels', p.heapSlope <= allowed || p.heapSlope * p.hours <= floor,
      `heap less history ${mib(p.heapSlope)} MiB/h with channels ${Math.round(p.channelsSlope)}/h (bound ${mib(allowed)} MiB/h, or growth <= ${mib(floor)} MiB); RSS ${mib(p.rssSlope)} MiB/h`);
  }

  const failed = checks.filter((c) => !c.ok).map((c) => `${c.name}: ${c.detail}`);
  return { ok: failed.length === 0, failed, checks, unjudged, fits, primary: p, worstStall: worstStall(samples) };
}

/** One fit per worker process (a killed worker's successor is a new pid), after the run's warm-up and its own. */
export function workerFits(samples, warmupS) {
  const byPid = new Map();
  for (const s of samples) {
    for (const w of s.workers) {
      if (w.fds === null || w.heapUsedBytes === null) continue;
      let series = byPid.get(w.pid);
      if (!series) byPid.set(w.pid, (series = { worker: w.worker, pid: w.pid, firstT: s.t, rows: [] }));
      if (s.t >= warmupS && s.t >= series.firstT + warmupS / 2) series.rows.push({ t: s.t, ...w });
    }
  }
  return [...byPid.values()].map(({ worker, pid, rows }) => ({
    worker,
    pid,
    points: rows.length,
    hours: rows.length > 1 ? (rows.at(-1).t - rows[0].t) / 3600 : 0,
    heapSlope: slopePerHour(rows.map((r) => [r.t, r.heapUsedBytes])),
    rssSlope: slopePerHour(rows.map((r) => [r.t, r.rssBytes])),
    fdsSlope: slopePerHour(rows.map((r) => [r.t, r.fds - r.connections])),
    meanHeap: mean(rows.map((r) => r.heapUsedBytes)),
    meanConnections: mean(rows.map((r) => r.connections))
  }));
}

function primaryFit(samples, warmupS) {
  const rows = samples.filter((s) => s.t >= warmupS).map((s) => ({ t: s.t, ...s.primary }));
  return {
    points: rows.length,
    hours: rows.length > 1 ? (rows.at(-1).t - rows[0].t) / 3600 : 0,
    heapSlope: slopePerHour(rows.map((r) => [r.t, r.heapUsedBytes - (r.historyBytes ?? 0)])),
    rssSlope: slopePerHour(rows.map((r) => [r.t, r.rssBytes])),
    channelsSlope: slopePerHour(rows.map((r) => [r.t, r.channels ?? 0])),
    meanHeap: mean(rows.map((r) => r.heapUsedBytes))
  };
}

/** The longest event-loop stall any worker had, and when. */
function worstStall(samples) {
  let worst = { ms: 0, t: 0, worker: null };
  for (const s of samples) for (const w of s.workers) if (w.loopMaxMs > worst.ms) worst = { ms: Math.round(w.loopMaxMs * 10) / 10, t: s.t, worker: w.worker };
  return worst;
}

function mean(xs) {
  return xs.length === 0 ? 0 : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function mib(bytes) {
  return Math.round((bytes / MiB) * 100) / 100;
}
