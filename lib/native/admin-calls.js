// The admin page's way into the server API: the primary, which serves the
// page, hands each of its reads and actions to one worker, and the worker
// answers exactly what the server API's core answers, so the page holds no
// rule of its own.
//
// A call that names an `app` runs on a protocol's view of the apps instead
// (`protocol`: `pusher` unless it says `ably`; lib/pusher/admin.js,
// lib/ably/admin.js); `apps` lists the apps with each protocol's figures.
//
// From the primary: [Op.ADMIN, token, method, params] -> {result} |
//                   {error: {code, message}} | null: the call failed without
//                   a code, a defect (the server API's own route drops such a
//                   request the same way)
import { Op } from '../core/ipc.js';
import { ErrorCode, GatewayError } from '../core/errors.js';
import { channelList, runMethod } from '../core/server.js';
import { handling } from '../transport/last-input.js';
import { quoted } from '../protocol/quoted.js';

/**
 * A protocol's view of the apps for the admin page: what it answers for one
 * app's channels (each method optional but channelsOf).
 * @typedef {object} AppsAdmin
 * @property {import('../pusher/apps.js').Apps} apps
 * @property {number} maxNameLength a channel name's, and so a prefix's
 * @property {(app: object, prefix: string) => Promise<Object<string, number>>} channelsOf the app's occupied channels starting with prefix: name -> subscribers
 * @property {(app: object, params: {channel: string}) => Promise<{channel: string, clients: object}>} [presence]
 * @property {(app: object, params: {channel: string, limit?: number, reverse?: boolean}) => Promise<{messages: object[]}>} [history]
 * @property {(app: object, params: {channel: string, event?: string, data: *}) => Promise<object>} [publish]
 */

const DEFAULT_PROTOCOL = 'pusher';
const APP_METHODS = new Set(['presence', 'history', 'publish']); // a protocol's own, where it has them

/**
 * @param {import('../worker/relay.js').WorkerRelay} relay
 * @param {import('../core/server.js').ServerContext} context the server API's
 * @param {Map<string, AppsAdmin>} admins each protocol's view of the apps, by the protocol's name
 */
export function attachAdmin(relay, context, admins) {
  relay.answers(Op.ADMIN, (method, params) => {
    handling('admin', quoted(method));
    return answer(method, params, context, admins);
  });
}

/** What the server API's core resolves, or the coded error it refuses with. */
async function answer(method, params, context, admins) {
  try {
    if (method === 'apps') return { result: await appsOf(admins) };
    if (params?.app !== undefined) return { result: await onApp(method, params, admins) };
    return { result: await runMethod(method, params, context) };
  } catch (err) {
    return err instanceof GatewayError ? { error: { code: err.code, message: err.message } } : null;
  }
}

/** Every app, with each protocol's occupied channels and their subscribers (cluster-wide). */
async function appsOf(admins) {
  if (admins.size === 0) throw servesNoApp();
  const [{ apps }] = admins.values(); // one table, every protocol's
  const figures = async (admin, app) => {
    const counts = Object.values(await admin.channelsOf(app, ''));
    return { channels: counts.length, subscribers: counts.reduce((a, b) => a + b, 0) };
  };
  // Every app's and protocol's cluster call at once: the page's refresh waits for the slowest, not for their sum.
  const out = await Promise.all(
    apps.list.map(async (app) => {
      const each = await Promise.all([...admins.values()].map((admin) => figures(admin, app)));
      // In the registry's order, whichever answered first: the page's columns follow it.
      const protocols = Object.fromEntries([...admins.keys()].map((name, i) => [name, each[i]]));
      return { appId: app.appId, key: app.key, enabled: app.enabled, protocols };
    })
  );
  return { apps: out };
}

/** A method on one app's channels of one protocol: `channels` (by name, as the native method answers), or the protocol's own. */
async function onApp(method, { protocol = DEFAULT_PROTOCOL, app: appId, ...params }, admins) {
  const admin = typeof protocol === 'string' ? admins.get(protocol) : undefined;
  if (admin === undefined) throw servesNoApp(protocol);
  const app = admin.apps.byId.get(appId);
  if (app === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, `no app ${quoted(appId)}`);
  if (method === 'channels') {
    const { prefix = '' } = params;
    if (typeof prefix !== 'string' || prefix.length > admin.maxNameLength) throw new GatewayError(ErrorCode.BAD_REQUEST, `prefix must be a string of at most ${admin.maxNameLength} characters`);
    return channelList(await admin.channelsOf(app, prefix));
  }
  if (!APP_METHODS.has(method) || admin[method] === undefined) throw new GatewayError(ErrorCode.NOT_FOUND, `no ${quoted(method)} for a ${protocol} app's channels`);
  return admin[method](app, params);
}

function servesNoApp(protocol) {
  return new GatewayError(ErrorCode.NOT_FOUND, protocol === undefined ? 'this gateway serves no app' : `this gateway serves no ${quoted(protocol)} app`);
}
