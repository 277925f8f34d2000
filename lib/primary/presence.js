// The primary's part of presence: the workers' joins, leaves and reads go to
// the engine (lib/engines/index.js, "Presence"); a dead worker's clients leave
// through the engine's detach. The operations are listed in lib/core/ipc.js; a
// read's refusal (too_many, Redis unreachable) is replied as a failure.
//
// A subscribe under a cap of members (Pusher's presence channels) is one
// question: the member admitted, the members read, the channel routed, and
// one answer, the channel's subscribe reply with the members. The read comes
// before the route, so the reply still leaves in order with the channel's
// messages; a client that left while the members were read (its entry gone:
// the worker's leave and unsubscribe came meanwhile) is not routed.
import { ErrorCode, GatewayError } from '../core/errors.js';
import { Op } from '../core/ipc.js';
import { replyResult } from './relay.js';

/**
 * @param {import('./relay.js').PrimaryRelay} relay
 * @param {import('../engines/index.js').Engine} engine
 */
export function attachPresence(relay, engine) {
  const { presence } = engine;
  relay.handle(Op.PRESENCE_JOIN, (link, [, channel, client, member]) => presence.join(channel, link.batch, client, member));
  relay.handle(Op.PRESENCE_LEAVE, (link, [, channel, client]) => presence.leave(channel, client));
  relay.handle(Op.PRESENCE_SUBSCRIBE, (link, [, token, channel, client, member, maxUsers]) =>
    presence.admit(channel, link.batch, client, member, maxUsers, (added) => {
      if (!added) return link.fail(token, new GatewayError(ErrorCode.TOO_MANY, `the channel has its ${maxUsers} members`));
      presence.list(channel, (members) => {
        if (members instanceof GatewayError) {
          presence.leave(channel, client);
          return replyResult(link, token, members);
        }
        if (!presence.table.holds(channel, client)) return link.answer(token, null); // left meanwhile: the worker has cancelled it
        engine.subscribe(channel, link.batch, undefined, (reply) => link.answer(token, { ...reply, clients: members.clients }));
      });
    })
  );
  relay.handle(Op.PRESENCE, (link, [, token, channel, stats]) => {
    const answer = (value) => replyResult(link, token, value);
    if (stats) presence.stats(channel, answer);
    else presence.list(channel, answer);
  });
}
