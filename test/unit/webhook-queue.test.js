// The webhook queue's bound: behind a batch the endpoint never answers, the
// events past the bound are dropped as they come, each counted, the first
// logged, and how many in all once the endpoint takes a batch again.
import { expect } from 'chai';
import { WebhookQueue, Result } from '../../lib/webhooks/queue.js';
import { eventually } from '../../scripts/harness/gateway.js';

describe('webhook queue bound', () => {
  it('drops what comes past the bound behind a stuck endpoint, counts and logs it, and keeps what was queued', async () => {
    const counted = { [Result.SENT]: 0, [Result.DROPPED]: 0, [Result.RETRIED]: 0 };
    const lines = [];
    let answer;
    const bodies = [];
    const queue = new WebhookQueue({
      post: (body) => {
        bodies.push(body);
        return new Promise((resolve) => (answer = resolve));
      },
      count: (result, n) => (counted[result] += n),
      log: { warn: (fields, message) => lines.push({ ...fields, message }), info: () => {}, error: () => {} },
      maxWaiting: 3
    });
    queue.add({ name: 'channel_occupied', channel: 'first' });
    await eventually(() => bodies.length === 1, { what: 'the first batch out' }); // and it gets no answer
    for (let i = 0; i < 8; i++) queue.add({ name: 'channel_occupied', channel: `c${i}` });
    expect(counted[Result.DROPPED]).to.equal(5);
    expect(lines.map((l) => l.message)).to.deep.equal(['webhooks: too many events waiting behind a failing endpoint; new ones are dropped']);
    answer();
    await eventually(() => bodies.length === 2, { what: 'the waiting three, as the next batch' });
    answer();
    await queue.whenEmpty();
    expect(counted[Result.SENT]).to.equal(4);
    expect(JSON.parse(bodies[1]).events.map((e) => e.channel)).to.deep.equal(['c0', 'c1', 'c2']);
    expect(lines[1]).to.include({ dropped: 5, message: 'webhooks: 5 events were dropped while the endpoint failed' });
    queue.stop();
  });
});
