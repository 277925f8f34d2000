// The load generator's side of Pusher's protocol (lib/pusher/): the URL a
// connection dials, its subscribe, the reader for an event on the hot path,
// and the HTTP API's signed publish. An event's data is the same data
// object the native runs publish ({"t","p","n","x"}), JSON-encoded into
// Pusher's data string, so the send time is read back without parsing.
// Pusher's events carry no seq: a run counts what arrives against what was
// published, and the order is not checked.
import { md5, sign } from '../pusher/signatures.js';
import { readInteger, SUBSCRIBE_ID } from './frames.js';

const EVENT = Buffer.from('{"channel":');
const SENT = Buffer.from('\\"t\\":');
const NAME_FIRST = Buffer.from('{"event":"');
const PUSHER_OWN = Buffer.from('pusher');
const CHANNEL_KEY = Buffer.from('"channel":');

function startsWith(buf, prefix, at) {
  return buf.length >= at + prefix.length && buf.compare(prefix, 0, prefix.length, at, at + prefix.length) === 0;
}

/** Where a Pusher client of app `key` connects, on --url's host. */
export function pusherUrl(url, key) {
  return new URL(`/app/${encodeURIComponent(key)}?protocol=7&client=loadgen&version=1`, url).href;
}

export function pusherSubscribeFrame(channel) {
  return `{"event":"pusher:subscribe","data":{"channel":"${channel}"}}`;
}

/**
 * Reads the send time of an event into `out` ({seq, sentUs}: seq 1 for
 * every event, sentUs -1 when the data is not ours) without allocating.
 * @returns {boolean} false when `buf` is not an event on a channel
 */
export function readPusherEvent(buf, out) {
  let from;
  if (startsWith(buf, EVENT, 0)) from = EVENT.length;
  // Another server may write the event's name first: then any event but
  // Pusher's own (pusher:…, pusher_internal:…) that names a channel.
  else if (startsWith(buf, NAME_FIRST, 0) && !startsWith(buf, PUSHER_OWN, NAME_FIRST.length) && buf.indexOf(CHANNEL_KEY) !== -1) from = NAME_FIRST.length;
  else return false;
  const sentAt = buf.indexOf(SENT, from);
  out.seq = 1;
  out.sentUs = sentAt === -1 ? -1 : readInteger(buf, sentAt + SENT.length);
  return true;
}

/** A Pusher control frame as the pool reads the native ones: a subscribe's answer, or nothing it tracks. */
export function pusherControl(buf) {
  let frame;
  try {
    frame = JSON.parse(buf);
  } catch {
    return {};
  }
  if (frame.event === 'pusher_internal:subscription_succeeded') return { type: 'ack', id: SUBSCRIBE_ID };
  if (frame.event === 'pusher:subscription_error') return { type: 'error', id: SUBSCRIBE_ID, code: `pusher ${frame.data?.status}` };
  return {};
}

/**
 * One signed POST /apps/<id>/events, as the server libraries sign it.
 * @returns {{path: string, body: string}}
 */
export function signedEvent({ appId, key, secret }, channel, dataJson) {
  const body = `{"name":"m","channel":"${channel}","data":${JSON.stringify(dataJson)}}`;
  const path = `/apps/${appId}/events`;
  const query =
    `auth_key=${key}&auth_timestamp=${Math.floor(Date.now() / 1000)}&auth_version=1.0` + `&body_md5=${md5(body)}`;
  const signature = sign(secret, `POST\n${path}\n${query}`);
  return { path: `${path}?${query}&auth_signature=${signature}`, body };
}
