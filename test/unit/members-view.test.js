// A worker's view of an Ably channel's members (lib/ably/members-view.js):
// the read and the events that came while it was under way meet exactly, an
// event decides only where it is newer than what the view holds (ably-js's
// rule), and a message missing from the channel's order ends the view.
import { expect } from 'chai';
import { MembersView } from '../../lib/ably/members-view.js';
import { presenceEventJson, PresenceAction } from '../../lib/ably/presence.js';

const { PRESENT, ENTER, UPDATE, LEAVE } = PresenceAction;
const message = (action, connectionId, clientId, msgSerial, index, data, timestamp = 1000) => ({ id: `${connectionId}:${msgSerial}:${index}`, action, clientId, connectionId, data, timestamp });
const event = (...args) => presenceEventJson(message(...args));
const shown = (view) => view.list().map(({ action, clientId, data }) => [action, clientId, data]).sort();

describe('an Ably channel\'s members view', function () {
  it('applies the events that came during its read over the read, in order, the ones the read shows changing nothing', async () => {
    let answer;
    const view = new MembersView(10, new Promise((resolve) => (answer = resolve)), () => expect.fail('no gap'));
    view.follow(11, event(ENTER, 'c1', 'ann', 1, 0, 'in'));
    view.follow(12, '{"id":"m","data":"a message, not a presence event"}');
    view.follow(13, event(UPDATE, 'c1', 'ann', 2, 0, 'busy'));
    view.follow(14, event(ENTER, 'c2', 'ben', 1, 0, 'hi'));
    // The read was taken after the first event: it shows ann as she entered, and ben not yet.
    answer([message(PRESENT, 'c1', 'ann', 1, 0, 'in'), message(PRESENT, 'c3', 'cat', 4, 0, 'here')]);
    await view.ready;
    expect(shown(view)).to.deep.equal([[PRESENT, 'ann', 'busy'], [PRESENT, 'ben', 'hi'], [PRESENT, 'cat', 'here']]);
    view.follow(15, event(LEAVE, 'c3', 'cat', 4, 100));
    expect(shown(view)).to.deep.equal([[PRESENT, 'ann', 'busy'], [PRESENT, 'ben', 'hi']]);
  });

  it('takes a departure only where it is newer: by msgSerial and index within a connection, by timestamp for one the gateway tells', async () => {
    const view = new MembersView(0, Promise.resolve([]), () => expect.fail('no gap'));
    await view.ready;
    view.follow(1, event(ENTER, 'c1', 'ann', 5, 0, 'again'));
    // A LEAVE of an earlier generation (msgSerial 3) that came after the ENTER of msgSerial 5: ann stays.
    view.follow(2, event(LEAVE, 'c1', 'ann', 3, 100));
    expect(shown(view)).to.deep.equal([[PRESENT, 'ann', 'again']]);
    // A departure the gateway made up (its id not the connection's) goes by its timestamp.
    view.follow(3, presenceEventJson({ id: 'left:c1:ann', action: LEAVE, clientId: 'ann', connectionId: 'c1', timestamp: 999 }));
    expect(shown(view)).to.deep.equal([[PRESENT, 'ann', 'again']]);
    view.follow(4, presenceEventJson({ id: 'left:c1:ann', action: LEAVE, clientId: 'ann', connectionId: 'c1', timestamp: 1000 }));
    expect(shown(view)).to.deep.equal([]);
  });

  it('ends at a message missing from the channel\'s order', async () => {
    let ended = 0;
    const view = new MembersView(7, Promise.resolve([]), () => ended++);
    await view.ready;
    view.follow(8, event(ENTER, 'c1', 'ann', 1, 0, 'in'));
    expect(ended).to.equal(0);
    view.follow(10, event(ENTER, 'c2', 'ben', 1, 0, 'in'));
    expect(ended).to.equal(1);
  });

  it('ends at a presence event it cannot read, rather than throw into the fan-out', async () => {
    let ended = 0;
    const view = new MembersView(0, Promise.resolve([]), () => ended++);
    await view.ready;
    view.follow(1, '{"action":2,"clientId":');
    expect(ended).to.equal(1);
  });
});
