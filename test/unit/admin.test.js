// The admin page's session cookie and login lockout, alone: the times are
// passed in, so an expired session and a lockout's end need no waiting.
import { expect } from 'chai';
import { AdminSessions, SESSION_MS } from '../../lib/admin/session.js';
import { Logins, LoginResult, LOCK_MS } from '../../lib/admin/logins.js';

describe('admin sessions and logins', () => {
  it('takes a session it issued until it expires, and refuses another key, an expired one and one logged out', () => {
    const sessions = new AdminSessions();
    const now = Date.now();
    const fresh = sessions.issue(now);
    expect(sessions.verify(fresh, now)).to.include({ expiresAt: now + SESSION_MS });
    expect(sessions.verify(fresh, now + SESSION_MS)).to.equal(undefined);
    expect(sessions.verify(sessions.issue(now - SESSION_MS - 1))).to.equal(undefined);
    expect(new AdminSessions().verify(fresh, now)).to.equal(undefined);
    sessions.end(sessions.verify(fresh, now));
    expect(sessions.verify(fresh, now)).to.equal(undefined);
  });

  it('locks an address after five wrong passwords within the window, for LOCK_MS, the right password included', () => {
    const results = [];
    const logins = new Logins('right-password', (result) => results.push(result));
    const t = Date.now();
    for (let i = 0; i < 4; i++) logins.attempt('a', 'wrong', t + i);
    expect(logins.attempt('a', 'wrong', t + 70000).result).to.equal(LoginResult.WRONG); // the first four are out of the window
    for (let i = 0; i < 4; i++) logins.attempt('a', 'wrong', t + 70001 + i);
    expect(logins.attempt('a', 'right-password', t + 70010)).to.deep.equal({ result: LoginResult.LOCKED, retryAfterS: 60 });
    expect(logins.attempt('b', 'right-password', t + 70010).result).to.equal(LoginResult.OK);
    expect(logins.attempt('a', 'right-password', t + 70004 + LOCK_MS).result).to.equal(LoginResult.OK);
    expect(results.filter((r) => r === LoginResult.WRONG)).to.have.length(9);
  });
});
