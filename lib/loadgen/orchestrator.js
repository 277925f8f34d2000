// Runs one load test: forks the agents, ramps, holds (publishing if asked),
// drains, closes and reports. The agents hold the connections; this process
// only commands them and polls their figures.
//
// `expected` is exact because the phases never overlap: publishing starts only
// once every agent has finished ramping (every subscribe acked or failed), it
// stops before anything closes, and only acknowledged publishes count.
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentHandle } from './agent-handle.js';
import { planRun } from './plan.js';
import { portRangeWarning, ephemeralPortCount } from './addresses.js';
import { combine, countOf } from './totals.js';
import { buildReport, progressLine } from './report.js';
import { publishOverHttp } from './http-publisher.js';
import { Phase } from './pool.js';

const POLL_MS = 250;
const PROGRESS_MS = 5000;
const CLOSE_TIMEOUT_MS = 10000;
/** Failures with nothing open that prove the target refuses everything. */
const REFUSAL_PROOF = 50;

/**
 * @param {object} options resolved options (lib/loadgen/options.js)
 * @returns {Promise<object>} the report (lib/loadgen/report.js)
 * @throws {UsageError} for flags that do not fit together
 */
export async function runLoad(options, { stderr = process.stderr } = {}) {
  const plan = planRun(options);
  const warning = portRangeWarning(options.connections, options.localAddress.length, ephemeralPortCount());
  if (warning) stderr.write(`warning: ${warning}\n`);
  return new Run(options, plan, stderr).execute();
}

class Run {
  constructor(options, plan, stderr) {
    this.options = options;
    this.plan = plan;
    this.stderr = stderr;
    this.agents = plan.agents.map(() => new AgentHandle());
    this.latest = new Array(plan.processes);
    this.worstDelayMs = new Array(plan.processes).fill(0); // per agent, since the last progress line
    this.totals = {};
  }

  async execute() {
    const startedAt = performance.now();
    const progress = this.startProgress(startedAt);
    const result = { publishing: { published: 0, errors: {}, unacked: 0 }, expected: 0 };
    try {
      await Promise.all(this.agents.map((agent, i) => agent.request('start', this.plan.agents[i])));
      result.aborted = await this.ramp();
      result.rampS = (performance.now() - startedAt) / 1000;
      if (!result.aborted) Object.assign(result, await this.hold());
      await this.poll();
      result.heldAtClose = this.totals.open ?? 0;
      result.totals = await this.closeAll();
    } finally {
      clearInterval(progress);
      for (const agent of this.agents) agent.kill();
    }
    return buildReport({
      ...result,
      options: this.options,
      processes: this.plan.processes,
      durationS: (performance.now() - startedAt) / 1000
    });
  }

  /** Waits for every agent to finish its ramp; resolves with why the run must stop, or undefined. */
  async ramp() {
    const o = this.options;
    const enough = Math.min(o.connections, REFUSAL_PROOF);
    // Each handshake ends within the timeout, so this only catches a stuck agent.
    const limitMs = (o.connections / o.rate) * 10_000 + o.handshakeTimeout * 2 + 30_000;
    let verdict;
    const done = await this.pollUntil((t) => {
      if (this.agents.every((a) => !a.alive)) verdict = 'every agent process exited';
      else if (!t.opened && countOf(t.failed) >= enough) verdict = `the target refused all of the first ${countOf(t.failed)} connections`;
      else return this.latest.every((s, i) => !this.agents[i].alive || s?.phase === Phase.RAMPED);
      return true;
    }, limitMs);
    return done ? verdict : `the ramp did not finish within ${Math.round(limitMs / 1000)} s`;
  }

  /** Holds for --duration, publishing if asked, then waits for the messages in flight. */
  async hold() {
    const o = this.options;
    const holdMs = o.duration * 1000;
    if (o.publishRate === 0) {
      await this.pollUntil(() => false, holdMs);
      return {};
    }
    const { subscribers = [] } = combine(await this.ask('subscribers'));
    let outcome;
    if (o.publishVia === 'http') {
      const publishing = publishOverHttp({
        wsUrl: o.url,
        apiKey: o.apiKey,
        pusherApp: o.protocol === 'pusher' ? { appId: o.pusherAppId, key: o.pusherKey, secret: o.pusherSecret } : undefined,
        ablyKey: o.protocol === 'ably' ? o.ablyKey : undefined,
        rate: o.publishRate,
        seconds: o.duration,
        channels: o.channels,
        channelPrefix: o.channelPrefix,
        messageSize: o.messageSize,
        publisher: this.plan.processes
      });
      await this.pollUntil(() => false, holdMs);
      outcome = await publishing;
    } else {
      await this.ask('publish', { rate: o.publishRate / this.plan.processes });
      await this.pollUntil(() => false, holdMs);
      outcome = combine(await this.ask('stopPublishing', { timeout: o.drainTimeout }));
    }
    const perChannel = outcome.perChannel ?? [];
    const expected = perChannel.reduce((sum, n, c) => sum + n * (subscribers[c] ?? 0), 0);
    await this.pollUntil((t) => t.received >= expected, o.drainTimeout);
    const published = perChannel.reduce((a, b) => a + b, 0);
    return { publishing: { published, errors: outcome.errors ?? {}, unacked: outcome.unacked ?? 0 }, expected };
  }

  /** Closes every connection; resolves with the agents' final figures combined. */
  async closeAll() {
    const finals = await this.ask('close', { timeout: CLOSE_TIMEOUT_MS });
    // An agent that died leaves its last status.
    return combine(finals.map((f, i) => f ?? this.latest[i]));
  }

  /** Sends a command to every agent; a dead agent answers undefined. */
  ask(cmd, args) {
    return Promise.all(this.agents.map((agent) => agent.request(cmd, args).catch(() => undefined)));
  }

  async poll() {
    const statuses = await this.ask('status');
    statuses.forEach((s, i) => {
      if (!s) return;
      this.latest[i] = s;
      this.worstDelayMs[i] = Math.max(this.worstDelayMs[i], s.loopDelayMs);
    });
    this.totals = combine(this.latest);
  }

  /** Polls until done(totals) or `timeoutMs` passed; resolves with whether done. */
  async pollUntil(done, timeoutMs) {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      await this.poll();
      if (done(this.totals)) return true;
      const left = deadline - performance.now();
      if (left <= 0) return false;
      await sleep(Math.min(POLL_MS, left));
    }
  }

  startProgress(startedAt) {
    let lastOpened = 0;
    return setInterval(() => {
      const t = this.totals;
      const connectRate = ((t.opened ?? 0) - lastOpened) / (PROGRESS_MS / 1000);
      lastOpened = t.opened ?? 0;
      const uptimeS = (performance.now() - startedAt) / 1000;
      const agents = this.latest.map((s, i) => ({ handshaking: s?.handshaking, loopDelayMs: this.worstDelayMs[i] }));
      this.worstDelayMs.fill(0);
      this.stderr.write(progressLine(t, { uptimeS, target: this.options.connections, connectRate, agents }));
    }, PROGRESS_MS);
  }
}
