// The protocols a worker speaks beside its own, each from its folder: a way
// in by WebSocket (the paths it upgrades) and its HTTP routes. A protocol
// without anything configured (no Pusher app) adds nothing. The channels
// they own are listed for every process in lib/wiring/ways-in.js.
import { pusherWaysIn } from '../pusher/index.js';

const PROTOCOLS = [pusherWaysIn];

/**
 * @param {object} worker the worker's parts: config, relay, subscriptions, namespaces, presence, sessions, log
 * @returns {{upgrade: import('./upgrade.js').UpgradeWay, route: {matches: Function, request: Function}}[]}
 */
export function protocolWaysIn(worker) {
  return PROTOCOLS.map((start) => start(worker)).filter((ways) => ways !== undefined);
}
