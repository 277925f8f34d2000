// The primary's part of presence: the workers' joins, leaves and reads go to
// the engine (lib/engines/index.js, "Presence"); a dead worker's clients leave
// through the engine's detach. The operations are listed in lib/core/ipc.js; a
// read's refusal (too_many, Redis unreachable) is replied as a failure.
import { Op } from '../core/ipc.js';
import { replyResult } from './relay.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {import('../engines/index.js').Engine} engine
 */
export function attachPresence(relay, { presence }) {
  relay.handle(Op.PRESENCE_JOIN, (link, [, channel, client, user, fields]) => presence.join(channel, link.batch, client, user, fields));
  relay.handle(Op.PRESENCE_LEAVE, (link, [, channel, client]) => presence.leave(channel, client));
  relay.handle(Op.PRESENCE_ADMIT, (link, [, token, channel, client, user, fields, maxUsers]) =>
    presence.admit(channel, link.batch, client, user, fields, maxUsers, (added) => link.answer(token, added))
  );
  relay.handle(Op.PRESENCE, (link, [, token, channel, stats]) => {
    const answer = (value) => replyResult(link, token, value);
    if (stats) presence.stats(channel, answer);
    else presence.list(channel, answer);
  });
}
