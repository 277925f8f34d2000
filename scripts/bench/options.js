// The benchmark's options: full-size defaults that finish the whole suite in
// under 10 minutes on a 2-core machine, and the tiny sizes of --smoke, which
// only proves the scripts still work: npm run test:slow runs it
// (test/slow/bench-smoke.test.js), so it runs the
// scenarios that start every server (idle, fan-out), the relay and the base
// memory, in well under a minute; the others share their parts.
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const SCENARIOS = ['idle', 'idle-large', 'handshake', 'proxy', 'fan-out', 'relay', 'keepalive', 'mass-close', 'gc', 'balance', 'auth', 'tls', 'channels', 'recovery', 'redis', 'sse', 'pusher', 'ably', 'base-memory'];

/** name: [default, smoke, help] */
export const OPTIONS = {
  scenarios: [SCENARIOS.join(','), 'idle,fan-out,relay,base-memory', 'comma list of scenarios to run'],
  workers: [2, 2, 'gateway and cluster workers, except where a scenario says otherwise'],
  'idle-connections': [15000, 200, 'idle and gc: connections held'],
  'large-connections': [60000, 400, 'idle-large: connections held over --large-workers'],
  'large-workers': [4, 4, 'idle-large: workers'],
  hold: [5, 0.5, 'idle: seconds held before measuring'],
  settle: [1, 0.1, 'idle: seconds a started server is left alone before its empty memory is read'],
  rate: [5000, 1000, 'new connections per second while ramping'],
  'per-agent': [15000, 15000, 'connections per load generator process (each may hold ~18k)'],
  'handshake-connections': [10000, 200, 'handshake and proxy: connections opened'],
  'handshake-rate': [20000, 2000, 'handshake and proxy: connections per second asked for'],
  'in-flight': [20, 20, 'handshake, pusher and ably, steady churn: handshakes under way at a time, each opened once an earlier one closed'],
  churn: [5000, 200, 'handshake, pusher and ably, steady churn: handshakes in all'],
  'fanout-subscribers': [15000, 200, 'fan-out: subscribers of the one channel'],
  'fanout-seconds': [8, 0.5, 'fan-out: seconds of publishing'],
  'message-size': [128, 128, 'fan-out: bytes of data per message'],
  'relay-seconds': [3, 1, 'relay: seconds per mode'],
  'redis-seconds': [3, 0.5, 'redis: seconds per engine, alone and under load'],
  'redis-baseline': ['', '', 'redis: another checkout (an older tree) whose gateway runs the same, in the same run'],
  'keepalive-connections': [15000, 200, 'keepalive: connections on the one worker'],
  'keepalive-seconds': [12, 2, 'keepalive: seconds watched'],
  'ping-interval': [5000, 1000, 'keepalive: ms between pings'],
  'mass-close-connections': [15000, 200, 'mass-close: connections on the one worker, closed together'],
  'mass-close-processes': [3, 1, 'mass-close: client processes holding them, closing at once (they compete for the cores)'],
  'gc-interval': [5000, 1000, 'gc: the manual GC interval compared with 0 (off, the default)'],
  'gc-seconds': [12, 1.5, 'gc: seconds watched'],
  'balance-connections': [4000, 200, 'balance: connections over 4 workers'],
  'auth-connections': [3000, 100, 'auth and tls: connections opened and held per variant'],
  channels: [1000000, 2000, 'channels: routed channels (subscriptions over 20 connections)'],
  'history-channels': [10000, 100, 'channels: channels given a full history of 100 messages of 128 B'],
  'recovery-clients': [1000, 50, 'recovery: clients resubscribing with since at once'],
  out: [fileURLToPath(new URL('../results', import.meta.url)), path.join(os.tmpdir(), 'gateway-bench-smoke'), 'folder for latest.json and latest.md']
};

/** @returns {object} camelCase options from the parsed flags, smoke sizes under --smoke */
export function resolveBenchOptions(values) {
  const out = { smoke: values.smoke === true };
  for (const [name, [full, smoke]] of Object.entries(OPTIONS)) {
    const given = values[name];
    const fallback = out.smoke ? smoke : full;
    const value = given === undefined ? fallback : typeof full === 'number' ? Number(given) : given;
    if (typeof full === 'number' && !(value > 0)) throw new Error(`--${name} must be a positive number, got ${given}`);
    out[name.replace(/-([a-z])/g, (_, c) => c.toUpperCase())] = value;
  }
  out.scenarios = out.scenarios.split(',').map((s) => s.trim()).filter(Boolean);
  const unknown = out.scenarios.filter((s) => !SCENARIOS.includes(s));
  if (unknown.length > 0) throw new Error(`unknown scenario ${unknown.join(', ')}; known: ${SCENARIOS.join(', ')}`);
  return out;
}
