// The clients a benchmark's connections are: the gateway's own by default,
// or another protocol's on one app the gateway is configured with. Each says
// what the load generator is told (its --protocol and credential), the URL a
// lone client dials and the text of the first frame it waits for
// (./churn.js), and how the fan-out's publisher (./publisher.js) subscribes,
// reads its frames as the native ones and publishes: the native one over its
// WebSocket, Pusher's and Ably's through their HTTP APIs (public channels
// take no client events; Ably's REST is what a backend uses).
import { publishFrame, subscribeFrame } from '../../lib/loadgen/frames.js';
import { pusherSubscribeFrame, pusherUrl, signedEvent } from '../../lib/loadgen/pusher-wire.js';
import { ablySubscribeFrame, ablyUrl, restMessage } from '../../lib/loadgen/ably-wire.js';

export const NATIVE_CLIENTS = Object.freeze({
  label: 'native',
  load: {},
  url: (url) => url,
  welcome: '"welcome"',
  publisher: (url, channel) => ({
    url,
    subscribe: subscribeFrame(channel),
    read: (frame) => frame,
    publish: (ws, data) => ws.send(publishFrame(channel, data))
  })
});

/** @param {{appId: string, key: string, secret: string}} app */
export function pusherClients(app) {
  return {
    label: 'Pusher',
    load: { protocol: 'pusher', 'pusher-key': app.key },
    url: (url) => pusherUrl(url, app.key),
    welcome: 'pusher:connection_established',
    publisher: (url, channel) => ({
      url: pusherUrl(url, app.key),
      subscribe: pusherSubscribeFrame(channel),
      read(frame) {
        if (frame.event === 'pusher_internal:subscription_succeeded') return { type: 'ack' };
        if (frame.event === 'pusher:error') return { type: 'error', code: frame.data?.code, message: frame.data?.message };
        return frame.channel === channel ? { type: 'message', data: JSON.parse(frame.data) } : {};
      },
      publish: (ws, data) => post(url, signedEvent(app, channel, data), {}, 200)
    })
  };
}

/** @param {{appId: string, key: string, secret: string}} app its Ably key is `<appId>.<key>:<secret>` */
export function ablyClients(app) {
  const key = `${app.appId}.${app.key}:${app.secret}`;
  return {
    label: 'Ably',
    load: { protocol: 'ably', 'ably-key': key },
    url: (url) => ablyUrl(url, key),
    welcome: '"action":4',
    publisher: (url, channel) => ({
      url: ablyUrl(url, key),
      subscribe: ablySubscribeFrame(channel),
      read(frame) {
        if (frame.action === 11) return { type: 'ack' };
        if (frame.action === 9) return { type: 'error', code: frame.error?.code, message: frame.error?.message };
        return frame.action === 15 && frame.channel === channel ? { type: 'message', data: frame.messages[0].data } : {};
      },
      publish: (ws, data) => post(url, restMessage(channel, data), { authorization: `Basic ${Buffer.from(key).toString('base64')}` }, 201)
    })
  };
}

async function post(wsUrl, { path, body }, headers, accepted) {
  const res = await fetch(new URL(path, wsUrl.replace(/^ws/, 'http')), { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } });
  if (res.status !== accepted) throw new Error(`the HTTP API answered ${res.status}: ${await res.text()}`);
}
