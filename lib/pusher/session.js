// A Pusher connection's session: what every connection holds
// (lib/core/session.js), and what is Pusher's own.
import { Session } from '../core/session.js';

export class PusherSession extends Session {
  constructor(way, id) {
    super(way, id);
    /**
     * Its app, once it is established in it (./app-connections.js writes
     * it, and changes it when the app's settings change); null before.
     * @type {import('./apps.js').App|null}
     */
    this.app = null;
    /**
     * Its app's figures (lib/session/metrics.js appFigures), beside the app:
     * what it is sent is counted there (lib/transport/transport.js countSent).
     * @type {import('../session/metrics.js').AppFigures|undefined}
     */
    this.appFigures = undefined;
    /**
     * The user a pusher:signin proved (./connection.js); null before one.
     * @type {string|null}
     */
    this.signedIn = null;
    /**
     * The user its channel_data named on each presence channel it holds
     * (./subscribe.js): client events there carry it. Pusher's members are
     * per channel and never the gateway's users. Made at its first
     * presence subscribe: most connections hold none.
     * @type {Map<string, string>|undefined} internal channel name -> user id
     */
    this.presenceUsers = undefined;
  }
}
