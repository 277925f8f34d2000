// Publishing through a Redis fault, and the checks that nothing acknowledged
// was lost: publishers that keep going (each waits for its answer, ack or
// error, before the next), subscribers held on every node and worker, and
// what each saw.
import { expect } from 'chai';
import { TestClient } from './client.js';
import { eventually } from '../../scripts/harness/gateway.js';
import { sleep } from './wait.js';

const PACE_MS = 5; // between a publisher's answer and its next publish: about 150 publishes/s each

export class SteadyPublisher {
  /**
   * @param {TestClient} client
   * @param {string[]} channels published to in turn
   * @param {string} name tags the data, so each publish is known by its id
   * @param {{retry?: boolean}} [options] retry: a refused publish is sent again (it may then be there twice)
   */
  constructor(client, channels, name, { retry = false } = {}) {
    this.client = client;
    this.channels = channels;
    this.name = name;
    this.retry = retry;
    this.acked = []; // {channel, id, seq, epoch, at}
    this.refused = 0;
    this.stopped = false;
    this.done = this.run();
  }

  get attempts() {
    return this.acked.length + this.refused;
  }

  async run() {
    for (let i = 0; !this.stopped; i++) {
      const channel = this.channels[i % this.channels.length];
      const id = `${this.name}-${i}`;
      const reply = await this.client.publish(channel, { id }).catch(() => ({ type: 'lost' }));
      if (reply.type === 'ack') this.acked.push({ channel, id, seq: reply.seq, epoch: reply.epoch, at: Date.now() });
      else {
        this.refused++;
        if (this.retry) i--;
      }
      await sleep(PACE_MS);
    }
  }

  ackedSince(time) {
    return this.acked.filter((a) => a.at > time).length;
  }

  stop() {
    this.stopped = true;
    return this.done;
  }
}

/** A SteadyPublisher on each gateway (`p0`, `p1`, … in the gateways' order), over `channels`, each on a connection of its own. */
export function holdPublishers(gateways, channels, clients, options) {
  return Promise.all(
    gateways.map(async (gw, i) => {
      const client = await TestClient.connect(gw.url);
      clients.push(client);
      return new SteadyPublisher(client, channels, `p${i}`, options);
    })
  );
}

/** Two subscribers of every channel on each gateway, from two source addresses (so on either worker). */
export async function holdSubscribers(gateways, channels, clients) {
  const subscribers = [];
  for (const gw of gateways) {
    for (const localAddress of ['127.0.0.1', '127.0.0.2']) {
      const client = await TestClient.connect(gw.url, { localAddress });
      clients.push(client);
      client.epochs = {};
      for (const channel of channels) {
        const ack = await client.subscribe(channel);
        expect(ack, `subscribe ${channel}`).to.include({ type: 'ack' });
        client.epochs[channel] = ack.epoch;
      }
      subscribers.push(client);
    }
  }
  return subscribers;
}

/**
 * Every acknowledged publish reaches every subscriber, each channel in seq
 * order with no gap and no seq twice; with `sameEpoch`, every ack in the
 * epoch the subscriber started in.
 */
export async function expectAllDelivered(subscribers, acked, { sameEpoch }) {
  for (const s of subscribers) {
    await eventually(() => acked.every((a) => s.messages(a.channel).some((m) => m.data.id === a.id)), {
      timeout: 15000,
      what: `${acked.length} acknowledged publishes at a subscriber (missing ${acked.filter((a) => !s.messages(a.channel).some((m) => m.data.id === a.id)).length})`
    });
  }
  for (const s of subscribers) {
    for (const channel of new Set(acked.map((a) => a.channel))) {
      const seqs = s.messages(channel).map((m) => m.seq);
      for (let i = 1; i < seqs.length; i++) expect(seqs[i], `${channel}: seq after ${seqs[i - 1]}`).to.equal(seqs[i - 1] + 1);
      const bySeq = new Map(s.messages(channel).map((m) => [m.seq, m.data.id]));
      for (const a of acked.filter((x) => x.channel === channel)) {
        expect(bySeq.get(a.seq), `${channel} seq ${a.seq}`).to.equal(a.id);
        if (sameEpoch) expect(a.epoch, `${channel}: the epoch of ${a.id}`).to.equal(s.epochs[channel]);
      }
    }
  }
}

/** A later subscribe with `since` on `gw` recovers what was acknowledged after it. */
export async function expectRecovery(gw, acked, clients) {
  const client = await TestClient.connect(gw.url);
  clients.push(client);
  for (const channel of new Set(acked.map((a) => a.channel))) {
    const mine = acked.filter((a) => a.channel === channel).sort((x, y) => x.seq - y.seq);
    const from = mine[Math.max(0, mine.length - 20)]; // within --history-size
    const ack = await client.request({ type: 'subscribe', channel, since: { seq: from.seq, epoch: from.epoch } });
    expect(ack, `since ${from.seq} on ${channel}`).to.include({ recovered: true });
    const later = mine.filter((a) => a.seq > from.seq).map((a) => a.id);
    await eventually(() => later.every((id) => client.messages(channel).some((m) => m.data.id === id)), { what: `recovery of ${channel}` });
  }
}

/**
 * Polls /health until stopped; `seen` holds every status answered, and
 * `changes` each change with when it was seen ({at, status}).
 */
export function watchHealth(gw) {
  const watch = { changes: [], stopped: false };
  (async () => {
    while (!watch.stopped) {
      const { body } = await gw.request('/health').catch(() => ({ body: {} }));
      if (watch.changes.at(-1)?.status !== body.status) watch.changes.push({ at: Date.now(), status: body.status });
      await sleep(50);
    }
  })();
  return {
    get seen() {
      return [...new Set(watch.changes.map((c) => c.status))];
    },
    changes: watch.changes,
    stop: () => (watch.stopped = true)
  };
}
