// `node bin/loadgen.js --protocol pusher` against a real gateway: Pusher
// connections on /app/<key>, public channels, publishes through the app's
// signed HTTP API, every event counted and timed; and the flags it refuses.
import { expect } from 'chai';
import { APP, startPusherGateway } from '../../helpers/pusher.js';
import { spawnLoadgen } from '../../helpers/loadgen.js';

/** Runs loadgen with these arguments and --json -. */
function loadgen(args) {
  return spawnLoadgen([...args, '--json', '-']);
}

describe('loadgen --protocol pusher', function () {
  this.timeout(60000);
  const pusher = ['--protocol', 'pusher', '--pusher-key', APP.key];

  it('holds Pusher connections, publishes through the HTTP API and receives every event', async () => {
    const gw = await startPusherGateway();
    try {
      const flags = ['--url', gw.url, ...pusher, '--pusher-app-id', APP.appId, '--pusher-secret', APP.secret];
      const run = await loadgen([...flags, '--connections', '300', '--channels', '3', '--publish-rate', '40', '--publish-via', 'http', '--duration', '2']);
      expect(run.code, run.stderr).to.equal(0);
      const { report } = run;
      expect(report).to.include({ open: 300, subscribed: 300, lost: 0 });
      expect(report.published).to.be.above(0);
      expect(report.received).to.equal(report.expected).and.equal(report.published * 100);
      expect(report.latencyMs.p99).to.be.a('number').above(0);
      expect(await gw.metric('gateway_connections_opened_total', '{transport="ws"}')).to.be.at.least(300);
    } finally {
      await gw.stop();
    }
  });

  it('refuses what a Pusher run cannot do, with the flag to give', async () => {
    const url = 'ws://127.0.0.1:9/ws';
    const cases = [
      [['--protocol', 'pusher'], '--protocol pusher needs --pusher-key'],
      [['--pusher-key', 'k'], '--pusher-key needs --protocol pusher'],
      [[...pusher, '--channels', '1', '--publish-rate', '1', '--publish-via', 'http'], '--pusher-app-id ID --pusher-secret S'],
      [[...pusher, '--transport', 'sse', '--channels', '1'], 'leave --transport ws'],
      [[...pusher, '--reconnect-every', '1'], '--reconnect-every needs the native protocol']
    ];
    for (const [args, message] of cases) {
      const run = await loadgen(['--url', url, ...args]);
      expect(run.code, args.join(' ')).to.equal(2);
      expect(run.stderr).to.include(message);
    }
  });
});
