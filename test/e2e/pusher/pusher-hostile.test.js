// Hostile input on Pusher's ways in, on a real gateway (2 workers): each
// input is answered with an error of the family, no worker restarts, and a
// bystander connection on each worker still round-trips a frame.
import { expect } from 'chai';
import { APP, eventually, RawPusher, signedRequest, startPusherGateway } from '../../helpers/pusher.js';

describe('Pusher: hostile input kills nothing', function () {
  this.timeout(60000);
  let gw;
  let bystanders;

  before(async () => {
    gw = await startPusherGateway(['--balance', 'even']);
    bystanders = [await RawPusher.open(gw), await RawPusher.open(gw)];
    await Promise.all(bystanders.map((b) => b.socketId()));
  });
  after(async () => {
    for (const b of bystanders ?? []) b.close();
    await gw?.stop();
  });

  /** Every bystander answers a ping, and no worker was started again. */
  async function nothingDied() {
    for (const b of bystanders) {
      const pongs = b.frames.filter((f) => f.event === 'pusher:pong').length;
      b.send({ event: 'pusher:ping', data: {} });
      await eventually(() => b.frames.filter((f) => f.event === 'pusher:pong').length > pongs, { what: 'a bystander pong' });
    }
    expect(gw.logs.filter((l) => l.msg === 'worker ready')).to.have.length(2);
    expect(gw.logs.filter((l) => l.level >= 50).map((l) => l.msg)).to.deep.equal([]);
  }

  it('answers bad percent-encoding in an HTTP API path with 400, before any signature check', async () => {
    for (const [method, path] of [
      ['POST', '/apps/%E0%A4%A/events'],
      ['GET', `/apps/${APP.appId}/channels/%E0%A4%A`],
      ['GET', `/apps/${APP.appId}/channels/%E0%A4%A/users`],
      ['POST', `/apps/${APP.appId}/users/%ZZ/terminate_connections`]
    ]) {
      const res = await gw.request(path, { method, body: method === 'POST' ? '{}' : undefined });
      expect(res.status, `${method} ${path}`).to.equal(400);
      expect(res.body, path).to.match(/percent-encoded/);
    }
    const signed = await signedRequest(gw, 'GET', `/apps/${APP.appId}/channels/%E0%A4%A`);
    expect(signed.status).to.equal(400);
    await nothingDied();
  });

  it('refuses a client event whose data is nested 5,000 levels deep, and keeps the connection', async () => {
    const raw = await RawPusher.open(gw);
    try {
      await raw.socketId();
      const deep = `${'['.repeat(5000)}${']'.repeat(5000)}`;
      raw.send(`{"event":"client-x","channel":"private-a","data":${deep}}`);
      const error = await raw.event('pusher:error');
      expect(error.data.message).to.match(/nested deeper than 64/);
      raw.send({ event: 'pusher:ping', data: {} });
      await raw.event('pusher:pong');
      await nothingDied();
    } finally {
      raw.close();
    }
  });
});
