// The Redis engine's batched publishes against a real redis-server: what
// reaches the primary in one turn goes to Redis as a few script calls, and
// still every channel's publishes take their seqs in the order they were
// sent, one publish Redis fails is refused alone, and a script Redis lost
// (SCRIPT FLUSH) is loaded again with nothing refused or reordered. The
// primary is paused (SIGSTOP) while the publishes are sent, so that they
// reach it together, as they do under load.
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { RedisServer } from '../../../scripts/harness/redis.js';
import { TestClient } from '../../helpers/client.js';
import { api } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';

const CHANNELS = ['batch-a', 'batch-b', 'batch-c'];
const PER_CHANNEL = 200;

describe('redis engine: publishes in batches', function () {
  let redis;
  let gw;
  let clients = [];
  const connect = async () => {
    const client = await TestClient.connect(gw.url);
    clients.push(client);
    return client;
  };
  /** The script calls Redis has run so far. */
  const scriptCalls = async () => Number(/cmdstat_evalsha:calls=(\d+)/.exec(await redis.command('INFO', 'commandstats'))?.[1] ?? 0);

  /**
   * Sends PER_CHANNEL publishes on each channel, interleaved, while the
   * primary is paused; `whilePaused` runs before it goes on.
   * @returns {Promise<object[]>} the publisher's answers (ack or error), by id
   */
  const publishTogether = async (channels, whilePaused = async () => {}) => {
    const publisher = await connect();
    gw.signal('SIGSTOP');
    try {
      let id = 0;
      for (let i = 1; i <= PER_CHANNEL; i++) for (const channel of channels) publisher.send({ type: 'publish', channel, data: { i }, id: ++id });
      publisher.send({ type: 'ping', id: 'read' }); // answered once the worker has read every publish
      await publisher.next((f) => f.type === 'pong');
      await whilePaused();
    } finally {
      gw.signal('SIGCONT');
    }
    const count = channels.length * PER_CHANNEL;
    const answers = () => publisher.frames.filter((f) => f.type === 'ack' || f.type === 'error');
    await eventually(() => answers().length === count, { timeout: 15000, what: `${count} answers (have ${answers().length})` });
    return answers().sort((x, y) => x.id - y.id);
  };

  beforeEach(async () => {
    redis = await RedisServer.start();
    gw = await startGateway(['--workers', '1', '--engine', 'redis', '--redis-url', redis.url, '--api-key', API_KEY, '--max-publish-rate', '100000']);
    await eventually(async () => (await gw.metric('gateway_engine_up')) === 1, { what: 'engine up' });
  });
  afterEach(async () => {
    for (const client of clients) client.close();
    clients = [];
    gw?.signal('SIGCONT'); // a failed test may leave the primary paused: it must be able to die
    await gw?.stop();
    await redis?.remove();
  });

  it('gives each channel its seqs in the order its publishes were sent, in a few script calls', async () => {
    const subscriber = await connect();
    for (const channel of CHANNELS) await subscriber.subscribe(channel);
    const callsBefore = await scriptCalls();
    const answers = await publishTogether(CHANNELS);
    const calls = (await scriptCalls()) - callsBefore;

    expect(answers.filter((f) => f.type === 'error')).to.deep.equal([]);
    // Ids go round the channels: the n-th publish on a channel is its seq n.
    for (const [n, ack] of answers.entries()) expect(ack.seq, `publish ${ack.id}`).to.equal(Math.floor(n / CHANNELS.length) + 1);
    for (const channel of CHANNELS) {
      await subscriber.next(() => subscriber.messages(channel).length === PER_CHANNEL);
      const got = subscriber.messages(channel);
      expect(got.map((m) => m.seq)).to.deep.equal(got.map((m) => m.data.i));
      expect(got.map((m) => m.data.i)).to.deep.equal(Array.from({ length: PER_CHANNEL }, (_, i) => i + 1));
    }
    expect(calls, `${answers.length} publishes in ${calls} script calls`).to.be.at.most(answers.length / 10);
  });

  it('refuses a publish that Redis fails, and stores and delivers the others of its batch', async () => {
    await redis.command('SET', 'gw:{broken}:state', 'not a hash'); // HINCRBY on it: WRONGTYPE
    const subscriber = await connect();
    for (const channel of ['fine-1', 'fine-2']) await subscriber.subscribe(channel);
    const callsBefore = await scriptCalls();
    const { status, body } = await api(gw, 'broadcast', { channels: ['fine-1', 'broken', 'fine-2'], data: { n: 1 } });

    expect(status).to.equal(200);
    const [first, broken, second] = body.result.results;
    expect(broken).to.deep.include({ channel: 'broken', error: { code: 'unavailable', message: broken.error.message } });
    expect([first, second]).to.deep.equal([
      { channel: 'fine-1', seq: 1, epoch: first.epoch },
      { channel: 'fine-2', seq: 1, epoch: second.epoch }
    ]);
    expect((await scriptCalls()) - callsBefore, 'the broadcast is one script call').to.equal(1);
    for (const channel of ['fine-1', 'fine-2']) await subscriber.next((f) => f.type === 'message' && f.channel === channel && f.data.n === 1);
    const logged = await gw.waitForLog((l) => l.msg?.startsWith('redis engine: Redis refused publishes'));
    expect(logged.error).to.match(/WRONGTYPE/);
  });

  it('loads the script again after SCRIPT FLUSH, and sends what Redis refused first, in order, nothing refused', async () => {
    const subscriber = await connect();
    for (const channel of CHANNELS) await subscriber.subscribe(channel);
    const answers = await publishTogether(CHANNELS, () => redis.command('SCRIPT', 'FLUSH'));

    expect(answers.filter((f) => f.type === 'error')).to.deep.equal([]);
    for (const [n, ack] of answers.entries()) expect(ack.seq, `publish ${ack.id}`).to.equal(Math.floor(n / CHANNELS.length) + 1);
    for (const channel of CHANNELS) {
      await subscriber.next(() => subscriber.messages(channel).length === PER_CHANNEL);
      expect(subscriber.messages(channel).map((m) => m.data.i)).to.deep.equal(Array.from({ length: PER_CHANNEL }, (_, i) => i + 1));
    }
    const logged = await gw.waitForLog((l) => l.msg?.startsWith('redis engine: Redis did not have the publish script'));
    expect(logged.publishes).to.be.above(0);
    // And the next publishes run as before.
    const after = await (await connect()).publish(CHANNELS[0], { i: 'after' });
    expect(after).to.include({ type: 'ack', seq: PER_CHANNEL + 1 });
  });
});
