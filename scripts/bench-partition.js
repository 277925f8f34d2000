#!/usr/bin/env node
// What a silent network partition looks like from the gateway, measured:
// two nodes on --engine redis and their redis-server, each in a network
// namespace of a private network (scripts/harness/netns.js), node 1 cut
// from Redis by dropping its packets (no FIN, no RST). Needs root.
//
// - outage: a publish on node 1 every 50 ms; cut for --cut-ms; the time
//   from the cut to `/health` degraded (null: never within the cut), how long
//   a publish made --probe-ms into the cut waits for its refusal (and all
//   those of the load made during the cut), and the time from the heal to
//   node 1's first ack.
// - presence: ann on node 1, bob on node 2, in a joinLeave presence channel;
//   node 1 cut for --presence-ttl + 4 s; then, on both nodes, each client's
//   member list (its read plus the diffs after it) and a fresh read, and the
//   member webhooks.
//
// --baseline DIR runs the same against another checkout's gateway (its own
// npm ci), after this one's; both go to the JSON.
//
// --repeat N runs the outage N times (the TCP retransmission timer a stuck
// connection waits on makes the old heal-to-ack time vary).
//
//   npm run bench:partition -- [--cut-ms 8000] [--probe-ms 1500] [--repeat 1] [--baseline /tmp/old] [--json scripts/results/partition.json]
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { scriptArgs } from './harness/args.js';
import { unsupported } from './harness/netns.js';
import { PartitionLab } from './harness/partition.js';
import { TestClient } from '../test/helpers/client.js';
import { joseHs256, SECRET } from '../test/helpers/tokens.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../test/helpers/webhook-endpoint.js';
import { applyDiffs, diffsOf, PRESENCE_NAMESPACES } from '../test/helpers/presence.js';
import { configFile } from '../test/helpers/api.js';

const API_KEY = 'bench-key';
const TTL_S = 2;
const POLL_MS = 20;
const LOAD_MS = 50;

const { values } = scriptArgs({
  usage: '[--cut-ms 8000] [--probe-ms 1500] [--repeat 1] [--baseline /tmp/old] [--json scripts/results/partition.json]',
  options: {
    'cut-ms': { type: 'string', default: '8000' },
    'probe-ms': { type: 'string', default: '1500' },
    repeat: { type: 'string', default: '1' },
    baseline: { type: 'string' },
    json: { type: 'string', default: 'scripts/results/partition.json' }
  }
});
const reason = unsupported();
if (reason !== undefined) {
  console.log(`bench:partition skipped: ${reason}`);
  process.exit(0);
}

const variants = [['this checkout', undefined]];
if (values.baseline !== undefined) variants.push([`baseline ${values.baseline}`, path.resolve(values.baseline, 'bin/gateway.js')]);
const results = { load: os.loadavg().map((n) => Number(n.toFixed(2))), cutMs: Number(values['cut-ms']), probeMs: Number(values['probe-ms']), runs: [] };
for (const [name, gateway] of variants) {
  console.log(`== ${name}`);
  const outages = [];
  for (let i = 0; i < Number(values.repeat); i++) outages.push(await outage(gateway));
  const run = { gateway: name, outages, presence: await presence(gateway) };
  console.log(JSON.stringify(run, null, 2));
  results.runs.push(run);
}
writeFileSync(values.json, `${JSON.stringify(results, null, 2)}\n`);
console.log(`load average ${results.load.join(' ')}; written to ${values.json}`);

async function outage(gateway) {
  const hooks = await hookEndpoint();
  const lab = await PartitionLab.start({ args: nodeArgs(), hooksSocket: hooks.socket, gateway });
  try {
    const [n1] = lab.nodes;
    for (let i = 0; i < 20; i++) await publish(n1);
    // The load: a publish on node 1 every LOAD_MS, each answered in its own time.
    let healAt = Infinity;
    let firstAckMs = null;
    let stop = false;
    const answered = [];
    const load = (async () => {
      while (!stop) {
        const sentAt = Date.now();
        answered.push(
          publish(n1).then(({ status }) => {
            const at = Date.now();
            if (status === 202 && at >= healAt && firstAckMs === null) firstAckMs = at - healAt;
            return { sentAt, status, ms: at - sentAt };
          })
        );
        await sleep(LOAD_MS);
      }
    })();
    lab.cut(n1);
    const cutAt = Date.now();
    let degradedMs = null;
    const degraded = (async () => {
      while (Date.now() - cutAt < values['cut-ms']) {
        if ((await n1.request('/health')).body.status === 'degraded') return (degradedMs = Date.now() - cutAt);
        await sleep(POLL_MS);
      }
    })();
    await sleep(Number(values['probe-ms']));
    const probeAt = Date.now();
    const probe = await publish(n1);
    const refusal = { status: probe.status, ms: Date.now() - probeAt };
    await degraded;
    await sleep(cutAt + Number(values['cut-ms']) - Date.now());
    lab.heal(n1);
    healAt = Date.now();
    while (firstAckMs === null && Date.now() - healAt < 30000) await sleep(POLL_MS);
    stop = true;
    await load;
    const during = (await Promise.all(answered)).filter((a) => a.sentAt >= cutAt && a.sentAt < healAt);
    const refused = during.filter((a) => a.status !== 202).map((a) => a.ms).sort((x, y) => x - y);
    return {
      degradedMs,
      refusal,
      firstAckMs,
      duringCut: { published: during.length, refused: refused.length, refusalMsMedian: refused[refused.length >> 1] ?? null, refusalMsMax: refused.at(-1) ?? null },
      logged: n1.logs.filter((l) => /^redis engine/.test(l.msg)).map((l) => l.msg)
    };
  } finally {
    await lab.stop();
    hooks.close();
  }
}

async function presence(gateway) {
  const hooks = await hookEndpoint();
  const lab = await PartitionLab.start({ args: nodeArgs(), hooksSocket: hooks.socket, gateway });
  const clients = [];
  try {
    const [n1, n2] = lab.nodes;
    const channel = 'room:split';
    const lists = [];
    for (const [node, user] of [[n1, 'ann'], [n2, 'bob']]) {
      const client = await TestClient.connect(node.url);
      clients.push(client);
      await client.request({ type: 'auth', token: await joseHs256({ sub: user, subscribe: ['*'] }) });
      await client.subscribe(channel);
      lists.push({ node, user, client, read: (await client.request({ type: 'presence', channel })).clients });
    }
    await sleep(1000);
    const before = await listsOf(lists, channel);
    lab.cut(n1);
    await sleep(TTL_S * 1000 + 4000);
    lab.heal(n1);
    await sleep(5000); // the heal, a refresh (a third of the TTL) and a diff interval, with room
    const after = await listsOf(lists, channel);
    const members = hooks.endpoint.events.filter((e) => e.channel === channel && e.user !== undefined).map((e) => `${e.name} ${e.user}`);
    return { before, after, memberWebhooks: members };
  } finally {
    for (const client of clients) client.close();
    await lab.stop();
    hooks.close();
  }
}

/** Each client's list (read + diffs) and a fresh read, by user name. */
async function listsOf(lists, channel) {
  const names = (clients) => Object.values(clients ?? {}).map((entry) => entry.user).sort();
  const out = {};
  for (const { node, user, client, read } of lists) {
    const fresh = await client.request({ type: 'presence', channel });
    out[`${user} on ${node.name}`] = { kept: names(applyDiffs(read, diffsOf(client, channel))), fresh: fresh.clients === undefined ? fresh : names(fresh.clients) };
  }
  return out;
}

function nodeArgs() {
  return ['--workers', '1', '--config', configFile(PRESENCE_NAMESPACES), '--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--presence-ttl', String(TTL_S), '--join-leave-interval', '200', '--member-grace', '300', '--webhook-secret', WEBHOOK_SECRET];
}

async function hookEndpoint() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-partition-'));
  const endpoint = new WebhookEndpoint(WEBHOOK_SECRET);
  const socket = path.join(dir, 'hooks');
  endpoint.server.listen(socket);
  await once(endpoint.server, 'listening');
  return {
    endpoint,
    socket,
    close: () => {
      endpoint.close();
      rmSync(dir, { recursive: true, force: true });
    }
  };
}

async function publish(node) {
  const res = await fetch(`${node.http}/publish`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ channel: 'plain:bench', data: Date.now() })
  });
  await res.arrayBuffer();
  return { status: res.status };
}

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));
}
