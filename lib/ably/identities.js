// The identity an Ably connection holds for the core (lib/core/identity.js's
// shape): its app's channels open to subscribe and publish to, as the core
// checks them. What the connection may do within them is its capability
// (./capability.js), checked at the edge. Made once per app, dropped when the
// app changes or goes.
import { NO_MEMBER } from '../core/identity.js';
import { appPrefix } from './channels.js';

export class AppIdentities {
  /** @param {import('../pusher/apps.js').Apps} apps */
  constructor(apps) {
    this.byApp = new Map(); // appId -> the identity its connections hold
    apps.on('change', (app, previous) => previous !== undefined && this.byApp.delete(previous.appId));
  }

  of(app) {
    let identity = this.byApp.get(app.appId);
    if (identity === undefined) this.byApp.set(app.appId, (identity = appIdentity(app)));
    return identity;
  }
}

function appIdentity(app) {
  const channels = Object.freeze({ any: false, exact: new Set(), prefixes: [appPrefix(app.appId)], templates: [] });
  return Object.freeze({ user: null, expiresAt: undefined, permissions: Object.freeze({ subscribe: channels, publish: channels }), channels: [], info: undefined, member: NO_MEMBER });
}
