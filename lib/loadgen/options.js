// Every loadgen option in one table (the shape lib/config/cli.js reads): the CLI, the
// LOADGEN_* environment variables, the checks and the README come from here.
// Checks that involve two flags, and the defaults that depend on the machine,
// are in plan.js.
import { commaList } from '../config/cli.js';
import { expandAddresses } from './addresses.js';
import { isValidChannel } from '../protocol/validate.js';

const int = (min, max) => ({ type: 'number', integer: true, min, max });
const ms = (min) => int(min, 3600 * 1000);

export const options = {
  url: { type: 'string', default: 'ws://127.0.0.1:8080/ws', check: checkUrl, describe: 'target (loopback: 127.0.0.0/8, ::1, localhost, unless --allow-remote)' },
  'allow-remote': {
    type: 'boolean',
    default: false,
    describe: 'allow a target and source addresses off this machine: only for a gateway you run yourself (EC2 load tests)'
  },
  transport: {
    type: 'string',
    choices: ['ws', 'sse'],
    default: 'ws',
    describe: "sse: hold Server-Sent Events streams (GET /sse on --url's host) instead of WebSockets; receive only"
  },
  protocol: {
    type: 'string',
    choices: ['native', 'pusher', 'ably'],
    default: 'native',
    describe:
      "pusher: Pusher's protocol (/app/<--pusher-key> on --url's host, public channels; publishes through the app's HTTP API with --publish-via http); " +
      "ably: Ably's (/ on --url's host with --ably-key, JSON; publishes through its REST API with --publish-via http)"
  },
  'pusher-key': { type: 'string', describe: 'the Pusher app key the connections use (--protocol pusher)' },
  'pusher-app-id': { type: 'string', describe: "the Pusher app id, for publishing through its HTTP API (--protocol pusher)" },
  'pusher-secret': { type: 'string', describe: "the Pusher app secret that signs the HTTP API's requests (--protocol pusher)" },
  'ably-key': { type: 'string', describe: 'the Ably key the connections and the REST publishes use, <appId>.<key>:<secret> (--protocol ably)' },
  encoding: {
    type: 'string',
    choices: ['json', 'msgpack'],
    default: 'json',
    describe: 'a WebSocket\'s frames: JSON text, or MessagePack (Sec-WebSocket-Protocol gateway.msgpack)'
  },
  delta: {
    type: 'boolean',
    default: false,
    describe: 'subscribe with "delta":"fossil" (the channels\' namespace must offer deltas); latency is measured on whole messages only'
  },
  connections: { ...int(1, 10_000_000), default: 1000, describe: 'connections to open and hold' },
  rate: { type: 'number', min: 0.1, default: 1000, describe: 'new connections per second, all processes together' },
  processes: {
    ...int(1, 1024),
    defaultDescription: 'enough to stay under the open-files limit',
    describe: 'agent processes'
  },
  'local-address': {
    type: 'string',
    array: true,
    default: [],
    coerce: (values) => expandAddresses(commaList(values)),
    defaultDescription: "kernel's choice",
    describe: 'source address, repeatable, or a range 127.0.0.1-127.0.0.32; used round-robin'
  },
  'source-ports': {
    type: 'boolean',
    default: true,
    describe: 'with --local-address, connection g binds address g mod A and port low + floor(g / A) of ip_local_port_range, instead of the kernel searching for a free port on every connect'
  },
  'max-handshakes': { ...int(1, 1e6), default: 1000, describe: 'handshakes in flight at most, all processes together' },
  'handshake-timeout': { ...ms(1), default: 10000, describe: 'ms before a handshake (or a subscribe) counts as failed' },
  channels: { ...int(0, 1e7), default: 0, describe: 'connection i subscribes to channel <prefix><i mod channels> (0 = no subscribe)' },
  'channel-prefix': {
    type: 'string',
    default: 'c',
    check: (value) => (isValidChannel(`${value}0`) && value.length <= 100 ? undefined : `--channel-prefix ${JSON.stringify(value)} makes no valid channel name`),
    describe: 'what channel names start with (c: c0, c1, ...); runs side by side on other prefixes share no channel'
  },
  'publish-rate': { type: 'number', min: 0, default: 0, describe: 'messages per second in all, published while holding' },
  'publish-via': { type: 'string', choices: ['ws', 'http'], default: 'ws', describe: 'ws: from the held connections; http: POST /publish driven by autocannon' },
  'api-key': { type: 'string', describe: 'bearer token for --publish-via http' },
  'jwt-secret': {
    type: 'string',
    describe: "under the gateway's --auth jwt: the HS256 secret; each connection signs its own token (sub: --jwt-sub-prefix and its index; subscribe and publish on every channel)"
  },
  'jwt-sub-prefix': { type: 'string', default: 'loadgen-', describe: 'what each signed token\'s sub starts with' },
  token: { type: 'string', describe: "under the gateway's --auth jwt: one token for every connection, instead of --jwt-secret" },
  'message-size': { ...int(64, 1 << 20), default: 128, describe: 'bytes of data per published message (about)' },
  'reconnect-every': {
    type: 'number',
    min: 0,
    default: 0,
    describe: 'seconds between reconnect rounds while holding: each drops --reconnect-fraction of the connections at once and re-dials them, resubscribing with since (a stream: Last-Event-ID) (0 = off)'
  },
  'reconnect-fraction': { type: 'number', min: 0.0001, max: 1, default: 0.1, describe: 'share of the connections each reconnect round drops' },
  duration: { type: 'number', min: 0, default: 30, describe: 'seconds to hold after the ramp, then close and report' },
  'drain-timeout': { ...ms(0), default: 5000, describe: 'ms to wait for messages still in flight once publishing stops' },
  json: { type: 'string', describe: 'write the report as JSON to this file (- = stdout)' }
};

function checkUrl(value) {
  let url;
  try {
    url = new URL(value);
  } catch {
    return `--url ${value} is not a URL`;
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:') return `--url must be ws:// or wss://, got ${value}`;
  return undefined;
}
