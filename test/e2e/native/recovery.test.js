// History and recovery against the real gateway: subscribe with `since`
// after a disconnect, a worker kill, a restart; the history's limits (size,
// TTL, memory budget); channel state forgotten when unused; bad `since`.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';
import { API_KEY, httpPublish } from '../../helpers/client-helpers.js';
import { sleep } from '../../helpers/wait.js';

const seqs = (client, channel) => client.messages(channel).map((m) => m.seq);
const range = (from, to) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

/** Subscribes with `since` and resolves with the ack. */
function resubscribe(client, channel, since) {
  return client.request({ type: 'subscribe', channel, since });
}

describe('recovery: history, epochs, since', function () {
  let gw;
  let clients = [];
  const track = (c) => (clients.push(c), c);
  const connect = async (options) => track(await TestClient.connect(gw.url, options));

  before(async () => {
    gw = await startGateway(['--api-key', API_KEY, '--max-publish-rate', '100000', '--history-size', '100']);
  });
  afterEach(() => {
    for (const c of clients) c.close();
    clients = [];
  });
  after(() => gw.stop());

  it('replays the 50 messages missed while away, in order, then live ones', async () => {
    const first = await connect();
    const ack = await first.subscribe('missed');
    expect(ack).to.include({ type: 'ack', seq: 0 });
    first.close();
    for (let i = 1; i <= 50; i++) await httpPublish(gw, 'missed', { i });

    const again = await connect();
    const recovered = await resubscribe(again, 'missed', { seq: 0, epoch: ack.epoch });
    expect(recovered).to.include({ type: 'ack', seq: 50, epoch: ack.epoch, recovered: true });
    await again.next(() => again.messages('missed').length === 50);
    expect(again.messages('missed').map((m) => m.data.i)).to.deep.equal(range(1, 50));
    // The ack comes first: the replay follows it.
    const ackAt = again.frames.indexOf(recovered);
    expect(again.frames.findIndex((f) => f.type === 'message')).to.be.greaterThan(ackAt);

    await httpPublish(gw, 'missed', { i: 51 });
    await again.next(() => again.messages('missed').length === 51);
    expect(seqs(again, 'missed')).to.deep.equal(range(1, 51));
    expect(await gw.metric('gateway_recoveries_total', '{result="recovered"}')).to.be.at.least(1);
  });

  it('recovers from where the client stopped, with nothing twice', async () => {
    const first = await connect();
    const ack = await first.subscribe('partial');
    for (let i = 1; i <= 10; i++) await httpPublish(gw, 'partial', { i });
    await first.next(() => first.messages('partial').length === 10);
    first.close();
    for (let i = 11; i <= 15; i++) await httpPublish(gw, 'partial', { i });

    const again = await connect();
    expect(await resubscribe(again, 'partial', { seq: 10, epoch: ack.epoch })).to.include({ seq: 15, recovered: true });
    await again.next(() => again.messages('partial').length === 5);
    expect(seqs(again, 'partial')).to.deep.equal(range(11, 15));
  });

  it('answers recovered: true at once when nothing was missed, on a worker that already has the channel', async () => {
    const holder = await connect();
    const ack = await holder.subscribe('quiet');
    const again = await connect(); // same source address, same worker
    expect(again.welcome.worker).to.equal(holder.welcome.worker);
    expect(await resubscribe(again, 'quiet', { seq: 0, epoch: ack.epoch })).to.include({ seq: 0, recovered: true });
    await httpPublish(gw, 'quiet', 'x');
    await again.next(() => again.messages('quiet').length === 1);
    expect(seqs(again, 'quiet')).to.deep.equal([1]);
  });

  it('says recovered: false when the gap is older than the history holds', async () => {
    const first = await connect();
    const ack = await first.subscribe('long-gone');
    first.close();
    for (let i = 1; i <= 120; i++) await httpPublish(gw, 'long-gone', { i });
    const again = await connect();
    expect(await resubscribe(again, 'long-gone', { seq: 0, epoch: ack.epoch })).to.include({ seq: 120, recovered: false });
    // ... but a client only 100 behind still recovers.
    const near = await connect();
    expect(await resubscribe(near, 'long-gone', { seq: 20, epoch: ack.epoch })).to.include({ recovered: true });
    await near.next(() => near.messages('long-gone').length === 100);
    expect(seqs(near, 'long-gone')).to.deep.equal(range(21, 120));
    expect(again.messages('long-gone')).to.deep.equal([]);
    expect(await gw.metric('gateway_recoveries_total', '{result="too_old"}')).to.be.at.least(1);
  });

  it('says recovered: false for another epoch, and for a seq the channel never reached', async () => {
    const c = await connect();
    const ack = await c.subscribe('epochs');
    const other = ack.epoch === 'zz' ? 'yy' : 'zz';
    expect(await resubscribe(await connect(), 'epochs', { seq: 0, epoch: other })).to.include({ recovered: false });
    expect(await resubscribe(await connect(), 'epochs', { seq: 5, epoch: ack.epoch })).to.include({ recovered: false });
    expect(await gw.metric('gateway_recoveries_total', '{result="epoch_changed"}')).to.be.at.least(2);
  });

  it('refuses a bad since with bad_request and replays nothing', async () => {
    const c = await connect();
    const bad = [
      { seq: -1, epoch: 'abc' },
      { seq: 1.5, epoch: 'abc' },
      { seq: 2 ** 60, epoch: 'abc' },
      { seq: '3', epoch: 'abc' },
      { seq: 3, epoch: 42 },
      { seq: 3, epoch: 'x'.repeat(17) },
      { seq: 3, epoch: 'ABC' },
      { seq: 3 },
      [3, 'abc'],
      'since',
      null
    ];
    for (const since of bad) {
      const answer = await resubscribe(c, 'bad-since', since);
      expect(answer, JSON.stringify(since)).to.include({ type: 'error', code: 'bad_request' });
    }
    // Nothing was subscribed by those: this one is a first subscribe.
    expect(await c.subscribe('bad-since')).to.include({ type: 'ack' });
    expect(c.messages('bad-since')).to.deep.equal([]);
  });

  it('rate-limits a client asking for recovery in a loop', async () => {
    const limited = await startGateway(['--max-publish-rate', '5']);
    try {
      const c = await TestClient.connect(limited.url);
      const ack = await c.subscribe('loop');
      const answers = [];
      for (let i = 0; i < 12; i++) {
        await c.request({ type: 'unsubscribe', channel: 'loop' });
        answers.push(await resubscribe(c, 'loop', { seq: 7, epoch: ack.epoch }));
      }
      const refused = answers.filter((a) => a.type === 'error');
      expect(refused.length).to.be.at.least(5);
      for (const a of refused) expect(a.code).to.equal('rate_limited');
      c.close();
    } finally {
      await limited.stop();
    }
  });
});

describe('recovery: racing a publisher', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--api-key', API_KEY, '--max-publish-rate', '100000', '--history-size', '100000']);
  });
  after(() => gw.stop());

  it('keeps 100 recovering clients consecutive, with nothing twice, while a publisher keeps publishing', async function () {
    this.timeout(60000);
    const address = (i) => ({ localAddress: `127.0.0.${1 + (i % 16)}` });
    const subscribers = await Promise.all(range(1, 100).map((i) => TestClient.connect(gw.url, address(i))));
    const acks = await Promise.all(subscribers.map((c) => c.subscribe('race')));
    const publisher = await TestClient.connect(gw.url, { localAddress: '127.0.0.20' });
    let sent = 0;
    let running = true;
    const publishing = (async () => {
      while (running) {
        for (let i = 0; i < 10; i++) publisher.send({ type: 'publish', channel: 'race', data: ++sent });
        await sleep(5);
      }
    })();
    // Every client leaves mid-stream, wherever it is, and comes back.
    await Promise.all(subscribers.map((c) => c.next(() => c.messages('race').length >= 10, 20000)));
    const resumeFrom = subscribers.map((c) => {
      c.close();
      return seqs(c, 'race').at(-1);
    });
    const again = await Promise.all(range(1, 100).map((i) => TestClient.connect(gw.url, address(i))));
    const answers = await Promise.all(
      again.map((c, i) => resubscribe(c, 'race', { seq: resumeFrom[i], epoch: acks[i].epoch }))
    );
    running = false;
    await publishing;
    const last = await httpPublish(gw, 'race', 'last');
    for (const answer of answers) expect(answer.recovered, JSON.stringify(answer)).to.equal(true);
    await Promise.all(again.map((c) => c.next(() => c.messages('race').at(-1)?.seq === last, 20000)));
    again.forEach((c, i) => {
      expect(seqs(subscribers[i], 'race')).to.deep.equal(range(1, resumeFrom[i]));
      expect(seqs(c, 'race')).to.deep.equal(range(resumeFrom[i] + 1, last));
    });
    for (const c of [...again, publisher]) c.close();
  });
});

describe('recovery: across a worker kill', function () {
  let gw;
  before(async () => {
    gw = await startGateway(['--api-key', API_KEY]);
  });
  after(() => gw.stop());

  it('recovers on another worker what was published while the old one died', async () => {
    const sub = await TestClient.connect(gw.url, { localAddress: '127.0.0.1' });
    const ack = await sub.subscribe('kill');
    await httpPublish(gw, 'kill', 1);
    await sub.next(() => sub.messages('kill').length === 1);
    process.kill(gw.workerPid(sub.welcome.worker), 'SIGKILL');
    await sub.closed;
    for (let i = 2; i <= 30; i++) await httpPublish(gw, 'kill', i);

    let again;
    for (let i = 2; i < 40 && again === undefined; i++) {
      const c = await TestClient.connect(gw.url, { localAddress: `127.0.0.${i}` });
      if (c.welcome.worker !== sub.welcome.worker) again = c;
      else c.close();
    }
    expect(again, 'a client on the other worker').to.not.equal(undefined);
    expect(await resubscribe(again, 'kill', { seq: 1, epoch: ack.epoch })).to.include({ seq: 30, recovered: true });
    await again.next(() => again.messages('kill').length === 29);
    expect(seqs(again, 'kill')).to.deep.equal(range(2, 30));
    again.close();
  });
});

describe('recovery: history limits and forgotten channels', function () {
  it('drops history past --history-ttl, and forgets a channel nobody holds', async () => {
    const gw = await startGateway(['--api-key', API_KEY, '--history-ttl', '1', '--workers', '1']);
    try {
      const c = await TestClient.connect(gw.url);
      const ack = await c.subscribe('ttl');
      c.close();
      await httpPublish(gw, 'ttl', 1);
      const channels = () => gw.metric('gateway_channels');
      await eventually(async () => (await channels()) === 1, { what: 'one channel with state' });
      // Its history expires, and nothing holds it: the channel is forgotten...
      await eventually(async () => (await channels()) === 0, { what: 'the channel forgotten', timeout: 5000 });
      expect(await gw.metric('gateway_history_bytes')).to.equal(0);
      // ... seq counter included: a new epoch, from seq 1.
      const again = await TestClient.connect(gw.url);
      const answer = await resubscribe(again, 'ttl', { seq: 0, epoch: ack.epoch });
      expect(answer).to.include({ seq: 0, recovered: false });
      expect(answer.epoch).to.not.equal(ack.epoch);
      expect(await httpPublish(gw, 'ttl', 2)).to.equal(1);
      again.close();
    } finally {
      await gw.stop();
    }
  });

  it('evicts the channel idle longest first when --history-memory is full', async () => {
    const gw = await startGateway(['--api-key', API_KEY, '--history-memory', '1', '--workers', '1']);
    try {
      const c = await TestClient.connect(gw.url);
      const idle = await c.subscribe('idle');
      const busy = await c.subscribe('busy');
      c.close();
      const big = 'x'.repeat(50000);
      for (let i = 0; i < 5; i++) await httpPublish(gw, 'idle', big);
      for (let i = 0; i < 16; i++) await httpPublish(gw, 'busy', big); // 21 x 50 KB > 1 MiB
      expect(await gw.metric('gateway_history_bytes')).to.be.at.most(2 ** 20);
      const again = await TestClient.connect(gw.url);
      expect(await resubscribe(again, 'idle', { seq: 0, epoch: idle.epoch })).to.include({ recovered: false });
      expect(await resubscribe(again, 'busy', { seq: 0, epoch: busy.epoch })).to.include({ recovered: true });
      await again.next(() => again.messages('busy').length === 16);
      again.close();
    } finally {
      await gw.stop();
    }
  });

  it('gives a restarted gateway new epochs: recovered: false, never wrong messages', async () => {
    let gw = await startGateway(['--api-key', API_KEY, '--workers', '1']);
    let ack;
    try {
      const c = await TestClient.connect(gw.url);
      ack = await c.subscribe('restart');
      await httpPublish(gw, 'restart', 'before');
      c.close();
    } finally {
      await gw.stop();
    }
    gw = await startGateway(['--api-key', API_KEY, '--workers', '1']);
    try {
      await httpPublish(gw, 'restart', 'after');
      const c = await TestClient.connect(gw.url);
      const answer = await resubscribe(c, 'restart', { seq: 0, epoch: ack.epoch });
      expect(answer).to.include({ recovered: false, seq: 1 });
      expect(answer.epoch).to.not.equal(ack.epoch);
      expect(c.messages('restart')).to.deep.equal([]);
      c.close();
    } finally {
      await gw.stop();
    }
  });
});
