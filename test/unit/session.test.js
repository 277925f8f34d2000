// A connection's session alone: the record every module reads a connection's
// state from keeps the fields its constructor made (so every session of a
// way in keeps one hidden class), and identity grants are edited on the
// connection's own copy, never on an identity other connections share.
import { expect } from 'chai';
import { Session } from '../../lib/core/session.js';
import { kSession } from '../../lib/core/symbols.js';
import { ANONYMOUS, grantChannel, identify, identityOf, memberOf, revokeChannel } from '../../lib/core/identity.js';
import { compilePermissions, allows } from '../../lib/core/permissions.js';
import { Subscriptions } from '../../lib/session/subscriptions.js';
import { Deadlines } from '../../lib/session/deadlines.js';
import { PusherSession } from '../../lib/pusher/session.js';

/** A connection as the session layer sees one: anything holding its session. */
function connection(SessionClass = Session) {
  const conn = {};
  conn[kSession] = new SessionClass({ count: 0 }, 'c1');
  return conn;
}

describe('a connection\'s session', () => {
  it('keeps the fields its constructor made through a connection\'s life', () => {
    for (const SessionClass of [Session, PusherSession]) {
      const conn = connection(SessionClass);
      const fields = Object.keys(conn[kSession]);
      const subscriptions = new Subscriptions({ last() {} });
      const deadlines = new Deadlines(() => {});
      try {
        identify(conn, ANONYMOUS);
        subscriptions.add(conn, 'a');
        subscriptions.add(conn, 'b', true);
        deadlines.set(conn, Date.now() + 60000);
        deadlines.remove(conn);
        subscriptions.removeAll(conn);
      } finally {
        deadlines.stop();
      }
      expect(Object.keys(conn[kSession]), SessionClass.name).to.deep.equal(fields);
      expect(conn[kSession].channels).to.equal(undefined);
      expect(conn[kSession].deadlineSlot).to.equal(-1);
    }
  });

  it('counts a connection\'s channels without its companions', () => {
    const conn = connection();
    const subscriptions = new Subscriptions({ last() {} });
    subscriptions.add(conn, 'p');
    expect(conn[kSession].channels).to.equal('p'); // one channel: its name, no Set
    subscriptions.add(conn, '#p-members', true);
    expect(subscriptions.count(conn)).to.equal(1);
    expect(subscriptions.channelsOf(conn)).to.deep.equal(['p', '#p-members']);
    subscriptions.remove(conn, '#p-members', true);
    expect(conn[kSession].companions).to.equal(0);
    expect(subscriptions.holds(conn, 'p')).to.equal(true);
  });

  it('grants a channel on the connection\'s own copy of a shared identity, and takes it back', () => {
    const { subscribe } = compilePermissions(['public-*'], []);
    const shared = Object.freeze({ user: null, permissions: { subscribe, publish: compilePermissions([], []).publish }, member: memberOf(null) });
    const [one, other] = [connection(), connection()];
    identify(one, shared);
    identify(other, shared);

    grantChannel(one, 'private-a', true);
    grantChannel(one, 'presence-b', false);
    const own = identityOf(one);
    expect(own).to.not.equal(shared);
    expect(allows(own.permissions.subscribe, 'private-a', null)).to.equal(true);
    expect(allows(own.permissions.subscribe, 'public-x', null)).to.equal(true); // what the shared one granted stays
    expect(allows(own.permissions.publish, 'private-a', null)).to.equal(true);
    expect(allows(own.permissions.publish, 'presence-b', null)).to.equal(false);
    expect(own.user).to.equal(null); // a grant makes no user: a way in keeps its own members (Pusher's are per channel)
    // The other connection, and the identity they share, are untouched.
    expect(identityOf(other)).to.equal(shared);
    expect(allows(shared.permissions.subscribe, 'private-a', null)).to.equal(false);

    revokeChannel(one, 'private-a');
    expect(allows(own.permissions.subscribe, 'private-a', null)).to.equal(false);
    expect(allows(own.permissions.publish, 'private-a', null)).to.equal(false);
    revokeChannel(other, 'public-x'); // never granted one: keeps what it has
    expect(allows(shared.permissions.subscribe, 'public-x', null)).to.equal(true);
  });
});
