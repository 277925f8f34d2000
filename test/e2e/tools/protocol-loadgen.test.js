// `node bin/loadgen.js --protocol pusher` and `--protocol ably` against a
// real gateway: Pusher connections on /app/<key>, Ably ones on / with a key,
// each on a public channel, publishes through the app's HTTP API (Pusher's
// signed one, Ably's REST), every message counted and timed; and the flags
// each refuses.
import { expect } from 'chai';
import { APP, startPusherGateway } from '../../helpers/pusher.js';
import { spawnLoadgen } from '../../helpers/loadgen.js';

/** Runs loadgen with these arguments and --json -. */
function loadgen(args) {
  return spawnLoadgen([...args, '--json', '-']);
}

const PUSHER = ['--protocol', 'pusher', '--pusher-key', APP.key];
const ABLY = ['--protocol', 'ably', '--ably-key', `${APP.appId}.${APP.key}:${APP.secret}`];

const PROTOCOLS = [
  {
    name: 'pusher',
    flags: [...PUSHER, '--pusher-app-id', APP.appId, '--pusher-secret', APP.secret],
    refused: [
      [['--protocol', 'pusher'], '--protocol pusher needs --pusher-key'],
      [['--pusher-key', 'k'], '--pusher-key needs --protocol pusher'],
      [[...PUSHER, '--channels', '1', '--publish-rate', '1', '--publish-via', 'http'], '--pusher-app-id ID --pusher-secret S'],
      [[...PUSHER, '--transport', 'sse', '--channels', '1'], 'leave --transport ws'],
      [[...PUSHER, '--reconnect-every', '1'], '--reconnect-every needs the native protocol']
    ]
  },
  {
    name: 'ably',
    flags: ABLY,
    refused: [
      [['--protocol', 'ably'], '--protocol ably needs --ably-key'],
      [['--ably-key', 'a.b:c'], '--ably-key needs --protocol ably'],
      [[...ABLY, '--channels', '1', '--publish-rate', '1'], '--publish-via http'],
      [[...ABLY, '--encoding', 'msgpack'], 'leave --encoding and --delta'],
      [[...ABLY, '--reconnect-every', '1'], '--reconnect-every needs the native protocol']
    ]
  }
];

for (const { name, flags, refused } of PROTOCOLS) {
  describe(`loadgen --protocol ${name}`, function () {
    this.timeout(60000);

    it('holds its connections, publishes through the HTTP API and receives every message', async () => {
      const gw = await startPusherGateway();
      try {
        const run = await loadgen(['--url', gw.url, ...flags, '--connections', '300', '--channels', '3', '--publish-rate', '40', '--publish-via', 'http', '--duration', '2']);
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

    it('refuses what its run cannot do, with the flag to give', async () => {
      for (const [args, message] of refused) {
        const run = await loadgen(['--url', 'ws://127.0.0.1:9/ws', ...args]);
        expect(run.code, args.join(' ')).to.equal(2);
        expect(run.stderr).to.include(message);
      }
    });
  });
}
