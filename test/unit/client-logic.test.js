// The client's pure pieces, without a gateway: backoff, queue, close codes,
// gap detection and the heartbeat (with real, short timers).
import { expect } from 'chai';
import { backoffDelay } from '../../lib/client/backoff.js';
import { PublishQueue } from '../../lib/client/queue.js';
import { closePolicy } from '../../lib/client/close-policy.js';
import { TokenSource } from '../../lib/client/token.js';
import { Subscription } from '../../lib/client/subscription.js';
import { Heartbeat } from '../../lib/client/heartbeat.js';
import { ClientErrorCode } from '../../lib/client/errors.js';
import { CloseCode, ErrorCode } from '../../lib/core/errors.js';
import { eventually } from '../../scripts/harness/gateway.js';

describe('client backoff', () => {
  const window = { base: 100, cap: 5000 };

  it('stays within [0, min(cap, base * 2^attempt)) at the extremes of the draw', () => {
    for (let attempt = 0; attempt < 60; attempt++) {
      const bound = Math.min(window.cap, window.base * 2 ** attempt);
      expect(backoffDelay(attempt, window, () => 0)).to.equal(0);
      const top = backoffDelay(attempt, window, () => 0.999999);
      expect(top).to.be.below(bound).and.above(bound * 0.999);
    }
  });

  it('spreads delays over the whole window (full jitter)', () => {
    const delays = Array.from({ length: 2000 }, () => backoffDelay(3, window));
    const buckets = new Array(10).fill(0);
    for (const d of delays) buckets[Math.floor(d / 80)]++; // window 800 ms, ten buckets
    // Uniform: each tenth holds about 200; none is empty or holds most of them.
    for (const count of buckets) expect(count).to.be.within(100, 320);
  });

  it('never exceeds the cap, however many attempts failed', () => {
    for (let i = 0; i < 1000; i++) expect(backoffDelay(1000, window)).to.be.below(window.cap);
  });
});

describe('client publish queue', () => {
  it('holds up to its bound, then rejects with queue_full', async () => {
    const queue = new PublishQueue(2);
    const first = queue.add({ n: 1 });
    const second = queue.add({ n: 2 });
    const err = await queue.add({ n: 3 }).catch((e) => e);
    expect(err.code).to.equal(ClientErrorCode.QUEUE_FULL);
    const entries = queue.take();
    expect(entries.map((e) => e.frame.n)).to.deep.equal([1, 2]);
    expect(queue.size).to.equal(0);
    entries[0].resolve('a');
    entries[1].reject(new Error('b'));
    expect(await first).to.equal('a');
    expect((await second.catch((e) => e)).message).to.equal('b');
  });

  it('rejects everything waiting at once', async () => {
    const queue = new PublishQueue(5);
    const waiting = [queue.add({}), queue.add({})];
    queue.rejectAll(Object.assign(new Error('closed'), { code: ClientErrorCode.CLOSED }));
    const results = await Promise.allSettled(waiting);
    expect(results.map((r) => r.reason.code)).to.deep.equal(['closed', 'closed']);
    expect(queue.size).to.equal(0);
  });

  it('with a bound of 0 queues nothing', async () => {
    const err = await new PublishQueue(0).add({}).catch((e) => e);
    expect(err.code).to.equal(ClientErrorCode.QUEUE_FULL);
  });
});

describe('client close policy', () => {
  it('stops on 1008 and retries drains, restarts, crashes and internal errors', () => {
    expect(closePolicy(CloseCode.POLICY).retry).to.equal(false);
    for (const code of [CloseCode.GOING_AWAY, CloseCode.RESTART, CloseCode.INTERNAL, CloseCode.TRY_AGAIN, CloseCode.TOO_BIG, 1006, 1000]) {
      expect(closePolicy(code).retry, String(code)).to.equal(true);
    }
  });

  it('backs off wider on 1013 and blames the largest publish in flight on 1009', () => {
    expect(closePolicy(CloseCode.TRY_AGAIN).minAttempt).to.be.above(closePolicy(1006).minAttempt);
    expect(closePolicy(CloseCode.TOO_BIG).largest).to.equal(ErrorCode.PAYLOAD_TOO_LARGE);
    expect(closePolicy(1006).largest).to.equal(undefined);
  });

  it('stops on 4001 and 4004, and comes back on 4003 only with a new token', () => {
    expect(closePolicy(CloseCode.AUTH_TIMEOUT).retry).to.equal(false);
    expect(closePolicy(CloseCode.DISCONNECTED).retry).to.equal(false);
    expect(closePolicy(CloseCode.TOKEN_EXPIRED)).to.include({ retry: true, newToken: true });
  });
});

describe('client token source', () => {
  it('refreshes 30 s ahead of exp, or a quarter of the life left when shorter', () => {
    expect(TokenSource.refreshDelay(3600000, 0)).to.equal(3570000);
    expect(TokenSource.refreshDelay(4000, 0)).to.equal(3000);
    expect(TokenSource.refreshDelay(-5, 0)).to.equal(0);
  });

  it('refuses a token and getToken together, and a getToken that resolves to no string', async () => {
    expect(() => new TokenSource({ token: 'a', getToken: () => 'b' })).to.throw('not both');
    expect(() => new TokenSource({ token: 42 })).to.throw('token must be a string');
    const err = await new TokenSource({ getToken: async () => undefined }).get().catch((e) => e);
    expect(err).to.be.an.instanceof(TypeError);
  });
});

describe('client gap detection', () => {
  it('accepts any first seq, then reports the seq that was due when one is skipped or restarts', () => {
    const sub = new Subscription();
    expect(sub.advance(7)).to.equal(undefined);
    expect(sub.advance(8)).to.equal(undefined);
    expect(sub.advance(11)).to.equal(9);
    expect(sub.advance(12)).to.equal(undefined);
    expect(sub.advance(1)).to.equal(13);
  });
});

describe('client heartbeat', () => {
  it('stays alive while pongs come back', async () => {
    let dead = false;
    let pings = 0;
    const hb = new Heartbeat(
      () => {
        pings++;
        hb.pong();
      },
      () => (dead = true)
    );
    hb.start(20);
    await eventually(() => pings >= 5, { what: 'five pings' });
    hb.stop();
    expect(dead).to.equal(false);
  });

  it('declares the connection dead one interval after an unanswered ping, once', async () => {
    let deaths = 0;
    let pings = 0;
    const hb = new Heartbeat(
      () => pings++,
      () => deaths++
    );
    hb.start(20);
    await eventually(() => deaths === 1, { what: 'declared dead' });
    expect(pings).to.equal(1);
    expect(hb.timer).to.equal(undefined); // stopped: no second verdict
  });
});
