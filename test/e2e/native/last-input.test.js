// The process-level handler is kept for defects, and when one fires its log
// line names the input the worker began last: its way in and its kind. A
// defect is injected (test/fixtures/defect-on-marker.js) where a worker
// makes bytes into text, and reached by a native frame, a Pusher frame and
// a request body, each killing its worker once.
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { TestClient } from '../../helpers/client.js';
import { RawPusher, startPusherGateway } from '../../helpers/pusher.js';
import { MARKER } from '../../fixtures/defect-marker.js';

const DEFECT = fileURLToPath(new URL('../../fixtures/defect-on-marker.js', import.meta.url));

describe('the process-level handler names the input begun last', function () {
  this.timeout(60000);
  let gw;

  before(async () => {
    gw = await startPusherGateway(['--api-key', 'key'], { env: { NODE_OPTIONS: `--import ${DEFECT}` } });
  });
  after(() => gw?.stop());

  /** The next uncaught-exception line after the `seen` first ones, once the worker it killed is back. */
  async function nextDefect(seen) {
    const line = await gw.waitForLog((l) => l.msg.startsWith('uncaught exception') && gw.logs.filter((o) => o.msg.startsWith('uncaught exception')).indexOf(l) === seen);
    await gw.waitForLog((l) => l.msg === 'worker ready' && l.worker === line.worker && gw.logs.indexOf(l) > gw.logs.indexOf(line));
    return line;
  }

  it('a native frame, a Pusher frame and an HTTP request each log their way in', async () => {
    const client = await TestClient.connect(gw.url);
    client.send({ type: 'ping', id: MARKER });
    const native = await nextDefect(0);
    expect(native.lastInput).to.deep.equal({ way: 'ws', kind: 'text frame' });
    expect(native.err.message).to.equal('a defect, injected by the test');

    const pusher = await RawPusher.open(gw);
    await pusher.socketId();
    pusher.send({ event: 'pusher:ping', data: { marker: MARKER } });
    expect((await nextDefect(1)).lastInput).to.deep.equal({ way: 'pusher', kind: 'text frame' });

    await fetch(`${gw.http}/publish`, { method: 'POST', headers: { Authorization: 'Bearer key' }, body: JSON.stringify({ channel: 'a', data: MARKER }) }).catch(() => {});
    expect((await nextDefect(2)).lastInput).to.deep.equal({ way: 'http', kind: 'POST /publish' });
  });
});
