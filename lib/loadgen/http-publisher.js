// Publishing over HTTP: autocannon drives POST /publish (or, for a Pusher
// run, Pusher's signed POST /apps/<id>/events; for an Ably run, Ably's POST
// /channels/<name>/messages with the key) at the wanted rate, round-robin
// over the channels. Only the requests the gateway took (202; Pusher's 200;
// Ably's 201) count as published, per channel, so `expected` stays exact.
import autocannon from 'autocannon';
import { nowUs, channelName, padding, dataJson, publishBody } from './frames.js';
import { signedEvent } from './pusher-wire.js';
import { restMessage } from './ably-wire.js';

/** Where and how a publish goes: the native route, keyed, the Pusher app's HTTP API, signed per request, or Ably's REST API with the key. */
function targetOf(wsUrl, apiKey, pusherApp, ablyKey) {
  const origin = wsUrl.replace(/^ws/, 'http');
  if (pusherApp !== undefined) {
    return { url: new URL('/', origin).href, headers: { 'content-type': 'application/json' }, accepted: 200, request: (channel, data) => signedEvent(pusherApp, channel, data) };
  }
  if (ablyKey !== undefined) {
    const headers = { authorization: `Basic ${Buffer.from(ablyKey).toString('base64')}`, 'content-type': 'application/json' };
    return { url: new URL('/', origin).href, headers, accepted: 201, request: restMessage };
  }
  return {
    url: new URL('/publish', origin).href,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    accepted: 202,
    request: (channel, data) => ({ body: publishBody(channel, data) })
  };
}

/**
 * Publishes round(rate × seconds) messages, then resolves.
 * @param {object} o
 * @param {string} o.wsUrl the gateway's WebSocket URL (POST /publish goes to the same host and port)
 * @param {string} [o.apiKey] for POST /publish
 * @param {{appId: string, key: string, secret: string}} [o.pusherApp] publishes through this app's HTTP API instead
 * @param {string} [o.ablyKey] publishes through Ably's REST API with this key instead
 * @param {number} o.rate messages per second
 * @param {number} o.seconds
 * @param {number} o.channels
 * @param {string} o.channelPrefix
 * @param {number} o.messageSize
 * @param {number} o.publisher the id written into each message
 * @returns {Promise<{perChannel: number[], errors: object, unacked: number}>}
 */
export async function publishOverHttp({ wsUrl, apiKey, pusherApp, ablyKey, rate, seconds, channels, channelPrefix, messageSize, publisher }) {
  const target = targetOf(wsUrl, apiKey, pusherApp, ablyKey);
  const pad = padding(messageSize);
  const perChannel = new Array(channels).fill(0);
  const errors = {};
  let counter = 0;
  let sent = 0;
  let answered = 0;
  const result = await autocannon({
    url: target.url,
    method: 'POST',
    headers: target.headers,
    connections: Math.min(20, Math.ceil(rate / 100)),
    overallRate: rate,
    amount: Math.max(1, Math.round(rate * seconds)),
    requests: [
      {
        // Called right before each request is written (pipelining 1), so the send time is accurate.
        setupRequest(request, context) {
          context.channel = counter % channels;
          sent++;
          const data = dataJson(nowUs(), publisher, counter++, pad);
          return { ...request, ...target.request(channelName(channelPrefix, context.channel), data) };
        },
        onResponse(status, body, context) {
          answered++;
          if (status === target.accepted) perChannel[context.channel]++;
          else errors[`HTTP ${status}`] = (errors[`HTTP ${status}`] ?? 0) + 1;
        }
      }
    ]
  });
  if (result.errors > 0) errors.connection = result.errors;
  return { perChannel, errors, unacked: sent - answered };
}
