// The identity a Pusher connection starts with (lib/core/identity.js's
// shape): its app's, with no user, the app's public and cache channels open
// to it and nothing to publish. Made once per app, dropped when the app
// changes or goes.
import { NO_MEMBER } from '../core/identity.js';
import { publicPrefixes } from './channels.js';

const NOTHING = Object.freeze({ any: false, exact: new Set(), prefixes: [], templates: [] });

export class AppIdentities {
  /** @param {import('./apps.js').Apps} apps */
  constructor(apps) {
    this.byApp = new Map(); // appId -> the identity its connections start with
    apps.on('change', (app, previous) => app === undefined && this.byApp.delete(previous.appId));
  }

  /** @param {import('./apps.js').App} app */
  of(app) {
    let identity = this.byApp.get(app.appId);
    if (identity === undefined) this.byApp.set(app.appId, (identity = appIdentity(app)));
    return identity;
  }
}

/** The grant lists' shape is lib/core/permissions.js's. */
function appIdentity(app) {
  const subscribe = Object.freeze({ any: false, exact: new Set(), prefixes: publicPrefixes(app.appId), templates: [] });
  return Object.freeze({ user: null, expiresAt: undefined, permissions: Object.freeze({ subscribe, publish: NOTHING }), channels: [], info: undefined, member: NO_MEMBER });
}
