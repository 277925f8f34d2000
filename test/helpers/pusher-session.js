// What the Pusher session tests share on either engine: signed subscribes
// from raw clients, sent in bursts, and their answers.
import { channelAuth, RawPusher } from './pusher.js';

/** A signed pusher:subscribe frame for a raw client (a presence channel's channel_data given as `user`). */
export function signedSubscribe(socketId, channel, user) {
  if (user === undefined) return { event: 'pusher:subscribe', data: { channel, auth: channelAuth(`${socketId}:${channel}`) } };
  const channelData = JSON.stringify({ user_id: user, user_info: { name: user } });
  return { event: 'pusher:subscribe', data: { channel, auth: channelAuth(`${socketId}:${channel}:${channelData}`), channel_data: channelData } };
}

/** The answer to a subscribe of `channel`: subscription_succeeded or subscription_error. */
export function subscribeAnswer(raw, channel) {
  return raw.frame((f) => f.channel === channel && /subscription_(succeeded|error)$/.test(f.event), `the answer to ${channel}`);
}

/**
 * `count` clients, one on each of the gateways in turn, all connected
 * first; then every one subscribes to the presence channel in the same
 * moment as a user of its own.
 * @returns {Promise<object[]>} each client's answer
 */
export async function presenceRush(gateways, count, channel) {
  const raws = [];
  for (let i = 0; i < count; i++) raws.push(await RawPusher.open(gateways[i % gateways.length]));
  const ids = await Promise.all(raws.map((raw) => raw.socketId()));
  raws.forEach((raw, i) => raw.send(signedSubscribe(ids[i], channel, `rush-${i}`)));
  const answers = await Promise.all(raws.map((raw) => subscribeAnswer(raw, channel)));
  return { raws, answers };
}
