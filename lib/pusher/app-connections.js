// Each app's open Pusher connections in this worker (lib/session/app-counts.js:
// counted there and in the primary, within the app's maxConnections), and
// what a change of the app does to them: removed, they close with 4001 (as
// an unknown key would); disabled, with 4003; changed otherwise, they go on
// under the app's new settings (its secret, its limits) from their next frame.
import { AppCounts } from '../session/app-counts.js';
import { kSession } from '../core/symbols.js';
import { PusherCode } from './frames.js';
import { closeWithError } from './transport.js';

export class AppConnections extends AppCounts {
  /**
   * @param {import('./apps.js').Apps} apps
   * @param {import('../worker/relay.js').WorkerRelay} relay
   */
  constructor(apps, relay) {
    super(relay);
    apps.on('change', (app, previous) => this.changed(app, previous));
  }

  changed(app, previous) {
    const set = this.of((app ?? previous).appId);
    if (set === undefined) return;
    if (app === undefined) return closeAll(set, PusherCode.APP_NOT_FOUND, 'the app was removed');
    if (!app.enabled) return closeAll(set, PusherCode.APP_DISABLED, 'the app is disabled');
    for (const ws of set) ws[kSession].app = app;
  }
}

function closeAll(set, code, message) {
  for (const ws of [...set]) closeWithError(ws, code, message);
}
