// An Ably connection's session: what every connection holds
// (lib/core/session.js), and what is Ably's own.
import { Session } from '../core/session.js';

export class AblySession extends Session {
  constructor(way, id) {
    super(way, id);
    /** @type {import('../pusher/apps.js').App|null} its app, once connected */
    this.app = null;
    /**
     * Its app's figures (lib/session/metrics.js appFigures), beside the app:
     * what it is sent is counted there (lib/transport/transport.js countSent).
     * @type {import('../session/metrics.js').AppFigures|undefined}
     */
    this.appFigures = undefined;
    /** The connectionId its client knows it by: its own id, or the one of the connection it resumed (./resume.js). */
    this.connectionId = id;
    /** @type {'json'|'msgpack'} the format it asked for */
    this.format = 'json';
    /** Whether it receives its own messages (`echo=false`: not). */
    this.echo = true;
    /** @type {string|undefined} its clientId; undefined: anonymous */
    this.clientId = undefined;
    /** Whether its credential lets it name any clientId (`*`). */
    this.wildcard = false;
    /** @type {string|undefined} the key it connected with (its app's, or one of its ablyKeys); undefined: a token */
    this.keyId = undefined;
    /** @type {Object<string, string[]>|null} what its credential may do (./capability.js) */
    this.capability = null;
    /** @type {{msgSerial: number, settled: boolean, answer: object}[]|undefined} its publishes not acknowledged yet, in order */
    this.acks = undefined;
    /** @type {Map<string, Map<string, string>>|undefined} the members it entered: members channel -> (clientId -> its entry) (./presence.js) */
    this.entered = undefined;
    /** The last generation it gave a member (./presence.js). */
    this.lastGeneration = 0;
    /** @type {NodeJS.Timeout|undefined} its token's end */
    this.expiry = undefined;
  }
}
