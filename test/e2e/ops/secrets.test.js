// The secret options (--jwt-secret, --api-key, --webhook-secret) never sit in
// a worker's environment, whether given as flags or as GATEWAY_* variables:
// the primary takes the variables out of its own environment before forking
// and hands the workers their configuration over IPC. Read where an attacker
// on the machine would read them: /proc/<pid>/environ and /proc/<pid>/cmdline
// of every process the primary started. The gateway still authenticates with them, after a worker
// is replaced and after a SIGHUP's rolling restart too.
import { readFileSync, readdirSync } from 'node:fs';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';
import { WebhookEndpoint, WEBHOOK_SECRET } from '../../helpers/webhook-endpoint.js';
import { SECRET_OPTIONS, workerConfig, resolveConfig } from '../../../lib/config/options.js';

const API_KEY = 'api-key-that-only-the-workers-hold-0123';
const SECRETS = [SECRET, API_KEY, WEBHOOK_SECRET];

describe('secrets', function () {
  let endpoint;
  let gw;

  before(async () => {
    endpoint = await WebhookEndpoint.start();
  });
  afterEach(() => gw?.stop());
  after(() => endpoint.server.close());

  it("are the options marked secret; a worker is given those it uses, never the primary's own", () => {
    expect(SECRET_OPTIONS).to.include.members(['jwt-secret', 'api-key', 'webhook-secret']);
    const config = resolveConfig({ auth: 'jwt', jwtSecret: SECRET, apiKey: API_KEY, webhookUrl: 'http://127.0.0.1:1/hooks', webhookSecret: WEBHOOK_SECRET });
    const given = workerConfig(config);
    expect(given).to.include({ jwtSecret: SECRET, apiKey: API_KEY, webhookUrl: 'http://127.0.0.1:1/hooks' });
    expect(given).to.not.have.property('webhookSecret');
    expect(config.webhookSecret, 'the primary keeps its own').to.equal(WEBHOOK_SECRET);
  });

  it('given as flags: no worker has one in its environment, and a replaced worker neither', async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--webhook-url', endpoint.url, '--webhook-secret', WEBHOOK_SECRET]);
    await expectCleanChildren(gw, 2);
    await expectAuthenticates(gw);

    const killed = gw.workerPid(1);
    process.kill(killed, 'SIGKILL');
    await eventually(() => gw.workerPid(1) !== killed, { what: 'worker 1 replaced', timeout: 20000 });
    await expectCleanChildren(gw, 2);
    await expectAuthenticates(gw);
  });

  it('given as GATEWAY_* variables: no worker has one, before and after a SIGHUP rolling restart', async () => {
    const env = {
      GATEWAY_AUTH: 'jwt',
      GATEWAY_JWT_SECRET: SECRET,
      GATEWAY_API_KEY: API_KEY,
      GATEWAY_WEBHOOK_URL: endpoint.url,
      GATEWAY_WEBHOOK_SECRET: WEBHOOK_SECRET
    };
    gw = await startGateway([], { env });
    await expectCleanChildren(gw, 2);
    await expectAuthenticates(gw);

    const before = [gw.workerPid(1), gw.workerPid(2)];
    gw.signal('SIGHUP');
    await gw.waitForLog((l) => l.msg === 'rolling restart done', 30000);
    expect(gw.logs.some((l) => /SIGHUP/.test(l.msg ?? '')), 'a refused reload').to.equal(false);
    expect([gw.workerPid(1), gw.workerPid(2)]).to.not.have.members(before);
    await expectCleanChildren(gw, 2);
    await expectAuthenticates(gw);
  });
});

/** Every descendant of the gateway's primary: none holds a secret in its environment or its command line. */
async function expectCleanChildren(gw, workers) {
  const pids = await eventually(
    () => {
      const found = descendants(gw.proc.pid);
      return found.length >= workers && found;
    },
    { what: `${workers} children of the primary` }
  );
  for (const pid of pids) {
    let environ;
    let cmdline;
    try {
      environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
    } catch {
      continue; // exited meanwhile (a replaced worker finishing its drain)
    }
    for (const secret of SECRETS) {
      expect(environ.includes(secret), `pid ${pid}'s environment holds a secret`).to.equal(false);
      expect(cmdline.includes(secret), `pid ${pid}'s command line holds a secret`).to.equal(false);
    }
    expect(environ.split('\0').filter((v) => v.startsWith('GATEWAY_')).map((v) => v.split('=')[0])).to.not.include.members([
      'GATEWAY_JWT_SECRET',
      'GATEWAY_API_KEY',
      'GATEWAY_WEBHOOK_SECRET'
    ]);
  }
}

/** A token signed with --jwt-secret is accepted, a publish with --api-key too. */
async function expectAuthenticates(gw) {
  const client = await TestClient.connect(gw.url);
  try {
    expect(await client.request({ type: 'auth', token: await joseHs256({ sub: 'alice' }) })).to.include({ type: 'ack', user: 'alice' });
  } finally {
    client.close();
  }
  const res = await gw.request('/publish', {
    method: 'POST',
    headers: { Authorization: `Bearer ${API_KEY}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ channel: 'news', data: 1 })
  });
  expect(res.status).to.equal(202);
}

/** The pids whose parent chain leads to `root`, read from /proc/<pid>/stat. */
function descendants(root) {
  const parents = new Map();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parents.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {} // gone meanwhile
  }
  const found = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift();
    for (const [pid, ppid] of parents) {
      if (ppid !== parent) continue;
      found.push(pid);
      queue.push(pid);
    }
  }
  return found;
}
