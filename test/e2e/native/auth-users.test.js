// Users across workers: POST /disconnect closes one user's connections on
// every worker, and --max-conns-per-user counts them cluster-wide.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { SECRET, joseHs256 } from '../../helpers/tokens.js';

const API_KEY = 'test-key';

/** Authenticated clients as `user`, from 127.0.0.1.. until `perWorker` sit on each of the two workers. */
async function spread(gw, user, perWorker, firstAddress = 1) {
  const token = await joseHs256({ sub: user, subscribe: ['*'] });
  const byWorker = { 1: [], 2: [] };
  for (let i = firstAddress; byWorker[1].length < perWorker || byWorker[2].length < perWorker; i++) {
    if (i > firstAddress + 64) throw new Error('clients did not spread over both workers');
    const client = await TestClient.connect(gw.url, { localAddress: `127.0.0.${i}` });
    if (byWorker[client.welcome.worker].length >= perWorker) {
      client.close();
      continue;
    }
    const ack = await client.request({ type: 'auth', token });
    if (ack.type !== 'ack') throw new Error(`auth refused: ${JSON.stringify(ack)}`);
    byWorker[client.welcome.worker].push(client);
  }
  return [...byWorker[1], ...byWorker[2]];
}

function disconnect(gw, user, key = API_KEY) {
  return gw.request('/disconnect', {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ user })
  });
}

describe('auth: users across workers', function () {
  let gw;
  let clients = [];
  after(() => gw?.stop());
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });

  it('POST /disconnect closes a user on both workers with 4004, and no one else', async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY]);
    const targets = await spread(gw, 'frank', 2, 1);
    const others = await spread(gw, 'grace', 1, 20);
    clients = [...targets, ...others];
    expect((await disconnect(gw, 'frank', 'wrong')).status).to.equal(403);
    expect((await gw.request('/disconnect', { method: 'POST', body: '{"user":1}', headers: { Authorization: `Bearer ${API_KEY}` } })).status).to.equal(400);
    const res = await disconnect(gw, 'frank');
    expect(res).to.deep.include({ status: 200, body: { disconnected: 4 } });
    for (const client of targets) expect((await client.closed).code).to.equal(4004);
    for (const client of others) expect((await client.request({ type: 'ping' })).type).to.equal('pong');
    expect((await disconnect(gw, 'frank')).body).to.deep.equal({ disconnected: 0 });
    expect(await gw.metric('gateway_disconnects_total', '{reason="api"}')).to.equal(4);
    await gw.stop();
  });

  it('--max-conns-per-user holds across two workers, and frees a slot when one closes', async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--max-conns-per-user', '2']);
    clients = await spread(gw, 'heidi', 1, 1); // one on each worker: the cap is reached
    const token = await joseHs256({ sub: 'heidi' });
    for (let i = 30; i < 34; i++) {
      const extra = await TestClient.connect(gw.url, { localAddress: `127.0.0.${i}` });
      clients.push(extra);
      expect(await extra.request({ type: 'auth', token }), `from 127.0.0.${i}`).to.include({ type: 'error', code: 'forbidden' });
    }
    const other = await TestClient.connect(gw.url);
    clients.push(other);
    expect((await other.request({ type: 'auth', token: await joseHs256({ sub: 'ivan' }) })).type).to.equal('ack');
    clients[0].close();
    await clients[0].closed;
    const again = await TestClient.connect(gw.url, { localAddress: '127.0.0.40' });
    clients.push(again);
    // The primary hears of the close over IPC: retry (within the auth rate limit) until it has.
    const answer = await eventually(
      async () => {
        const reply = await again.request({ type: 'auth', token });
        return reply.type === 'ack' && reply;
      },
      { interval: 600, what: 'a free slot for heidi' }
    );
    expect(answer).to.include({ type: 'ack', user: 'heidi' });
  });
});
