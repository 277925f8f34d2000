// lib/client under --auth jwt, against the real gateway: a token on every
// (re)connect, the refresh ahead of exp, and the auth close codes.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { API_KEY, httpPublish, nodeClient, whenOpen } from '../../helpers/client-helpers.js';
import { SECRET, joseHs256, nowS } from '../../helpers/tokens.js';
import { State, ClientErrorCode } from '../../../lib/client/index.js';

/** A client recording its states and errors. */
function watched(url, options) {
  const client = nodeClient(url, options);
  client.states = [];
  client.errors = [];
  client.on('state', (state, detail) => client.states.push([state, detail?.code]));
  client.on('error', (err) => client.errors.push(err));
  return client;
}

describe('client with tokens', function () {
  let gw;
  let clients = [];
  const track = (c) => (clients.push(c), c);

  before(async () => {
    gw = await startGateway(['--auth', 'jwt', '--jwt-secret', SECRET, '--api-key', API_KEY, '--auth-timeout', '1000']);
  });
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(() => gw.stop());

  it('refreshes by itself across an expiry, on one connection', async () => {
    let calls = 0;
    const getToken = () => (calls++, joseHs256({ sub: 'kim', exp: nowS() + 3, subscribe: ['feed'] }));
    const client = track(watched(gw.url, { getToken }));
    const got = [];
    await client.subscribe('feed', (data) => got.push(data));
    const started = Date.now();
    await eventually(() => Date.now() - started > 4500, { timeout: 6000, what: 'past the first token exp' });
    expect(calls).to.be.at.least(2);
    expect(client.states.filter(([s]) => s === State.OPEN)).to.have.length(1);
    await httpPublish(gw, 'feed', 'still here');
    await eventually(() => got.includes('still here'), { what: 'a message after the refreshes' });
    expect(await gw.metric('gateway_disconnects_total', '{reason="token_expired"}')).to.equal(undefined);
  });

  it('reconnects with a new token after a 4003, and resubscribes', async () => {
    let calls = 0;
    const getToken = () => {
      calls++;
      if (calls === 2) throw new Error('the application server is down'); // the refresh fails once
      return joseHs256({ sub: 'lee', exp: nowS() + 2, subscribe: ['feed'] });
    };
    const client = track(watched(gw.url, { getToken }));
    const got = [];
    await client.subscribe('feed', (data) => got.push(data));
    await eventually(() => client.states.some(([s, code]) => s === State.RECONNECTING && code === 4003), { what: 'a 4003' });
    await whenOpen(client);
    await eventually(
      async () => {
        await httpPublish(gw, 'feed', 'after 4003');
        return got.includes('after 4003');
      },
      { what: 'a message after the reconnect', interval: 200 }
    );
    expect(client.errors.some((e) => /application server is down/.test(e.message))).to.equal(true);
  });

  it('stops and reports on 4004 from POST /disconnect', async () => {
    const client = track(watched(gw.url, { token: await joseHs256({ sub: 'max' }) }));
    await whenOpen(client);
    const res = await gw.request('/disconnect', {
      method: 'POST',
      headers: { Authorization: `Bearer ${API_KEY}` },
      body: JSON.stringify({ user: 'max' })
    });
    expect(res.body).to.deep.equal({ disconnected: 1 });
    await eventually(() => client.state === State.CLOSED, { what: 'closed for good' });
    expect(client.errors.map((e) => [e.code, e.closeCode])).to.deep.equal([[ClientErrorCode.CLOSED, 4004]]);
  });

  it('stops and reports on 4001 when it has no token, and on a refused token', async () => {
    const bare = track(watched(gw.url));
    await eventually(() => bare.state === State.CLOSED, { what: 'closed after the auth timeout' });
    expect(bare.errors.map((e) => e.closeCode)).to.deep.equal([4001]);

    const refused = track(watched(gw.url, { token: 'not.a.token' }));
    await eventually(() => refused.state === State.CLOSED, { what: 'closed after a refused token' });
    expect(refused.errors.map((e) => e.code)).to.deep.equal(['unauthorized', ClientErrorCode.CLOSED]);
  });

  it('stops on 4003 when its token is a fixed string', async () => {
    const client = track(watched(gw.url, { token: await joseHs256({ sub: 'ned', exp: nowS() + 2 }) }));
    await whenOpen(client);
    await eventually(() => client.state === State.CLOSED, { what: 'closed at exp' });
    expect(client.errors.map((e) => e.closeCode)).to.deep.equal([4003]);
  });
});
