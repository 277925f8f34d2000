// An acknowledged publish is a promise the gateway keeps: the ack means the
// engine stored it, so it reaches the subscribers even when the worker that
// acknowledged it is killed at once.
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';

const COUNT = 3000;

describe('acknowledged publishes', function () {
  let gw;
  afterEach(async () => {
    // A failed test may leave the primary stopped: it must be able to die.
    gw?.signal('SIGCONT');
    await gw?.stop();
  });

  it('reach the subscribers when their worker dies right after acknowledging them', async () => {
    gw = await startGateway(['--max-publish-rate', '100000']);
    const publisher = await clientOn(gw, 1);
    const subscriber = await clientOn(gw, 2);
    await subscriber.subscribe('acked');
    const victim = gw.workerPid(1);

    // With the primary stopped nothing is stored, so nothing may be acknowledged.
    gw.signal('SIGSTOP');
    const data = 'x'.repeat(1000);
    for (let id = 1; id <= COUNT; id++) publisher.send({ type: 'publish', channel: 'acked', data: { id, data }, id });
    publisher.send({ type: 'ping', id: 'after' }); // answered once the worker has read every publish
    await publisher.next((f) => f.type === 'pong');
    const acks = () => publisher.frames.filter((f) => f.type === 'ack');
    expect(acks(), 'acks while the primary could store nothing').to.have.length(0);

    // Stored: the acks come; the worker is killed at the first.
    gw.signal('SIGCONT');
    await publisher.next((f) => f.type === 'ack');
    process.kill(victim, 'SIGKILL');
    await eventually(() => !alive(victim), { what: 'worker 1 gone' });
    const acked = acks().map((f) => f.id);
    expect(acks().every((f) => f.seq > 0 && typeof f.epoch === 'string'), 'acks carry seq and epoch').to.equal(true);

    const received = () => new Set(subscriber.messages('acked').map((m) => m.data.id));
    await eventually(() => acked.every((id) => received().has(id)), {
      timeout: 15000,
      what: `all ${acked.length} acknowledged publishes delivered (have ${received().size})`
    });
  });
});

/** A client on `worker`, trying source addresses 127.0.0.2, .3, … */
async function clientOn(gw, worker) {
  for (let i = 2; i < 40; i++) {
    const client = await TestClient.connect(gw.url, { localAddress: `127.0.0.${i}` });
    if (client.welcome.worker === worker) return client;
    client.close();
  }
  throw new Error(`no source address reached worker ${worker}`);
}

/** Running, not dead: a killed worker stays a zombie while its stopped parent cannot reap it. */
function alive(pid) {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}
