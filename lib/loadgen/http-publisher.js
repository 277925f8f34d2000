// Publishing over HTTP: autocannon drives POST /publish at the wanted rate,
// round-robin over the channels. A 202 means the gateway took the message;
// only those count as published, per channel, so `expected` stays exact.
import autocannon from 'autocannon';
import { nowUs, channelName, padding, dataJson, publishBody } from './frames.js';

const ACCEPTED = 202;

/**
 * Publishes round(rate × seconds) messages, then resolves.
 * @param {object} o
 * @param {string} o.wsUrl the gateway's WebSocket URL (POST /publish goes to the same host and port)
 * @param {string} o.apiKey
 * @param {number} o.rate messages per second
 * @param {number} o.seconds
 * @param {number} o.channels
 * @param {string} o.channelPrefix
 * @param {number} o.messageSize
 * @param {number} o.publisher the id written into each message
 * @returns {Promise<{perChannel: number[], errors: object, unacked: number}>}
 */
export async function publishOverHttp({ wsUrl, apiKey, rate, seconds, channels, channelPrefix, messageSize, publisher }) {
  const url = new URL('/publish', wsUrl.replace(/^ws/, 'http'));
  const pad = padding(messageSize);
  const perChannel = new Array(channels).fill(0);
  const errors = {};
  let counter = 0;
  let sent = 0;
  let answered = 0;
  const result = await autocannon({
    url: url.href,
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
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
          return { ...request, body: publishBody(channelName(channelPrefix, context.channel), data) };
        },
        onResponse(status, body, context) {
          answered++;
          if (status === ACCEPTED) perChannel[context.channel]++;
          else errors[`HTTP ${status}`] = (errors[`HTTP ${status}`] ?? 0) + 1;
        }
      }
    ]
  });
  if (result.errors > 0) errors.connection = result.errors;
  return { perChannel, errors, unacked: sent - answered };
}
