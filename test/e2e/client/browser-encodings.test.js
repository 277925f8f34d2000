// The client library in a real headless Chromium speaking MessagePack and
// taking deltas, with @msgpack/msgpack and fossil-delta imported from the
// gateway's /vendor/ paths through an import map: no build step.
import { expect } from 'chai';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { TestClient } from '../../helpers/client.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A page that imports the client from the gateway and records what its subscriptions hand over. */
function page(http, url) {
  return `<!doctype html>
<script type="importmap">
  { "imports": { "@msgpack/msgpack": "${http}/vendor/msgpack/index.mjs", "fossil-delta": "${http}/vendor/fossil-delta.js" } }
</script>
<script type="module">
  import { connect } from '${http}/client.js';
  window.got = { delta: [], binary: [], errors: [], transport: [] };
  const client = connect('${url}', { encoding: 'msgpack' });
  client.on('error', (err) => window.got.errors.push(err.message));
  client.on('state', (state) => state === 'open' && window.got.transport.push(client.transport));
  client.subscribe('state:browser', { delta: true }, (data) => window.got.delta.push(data))
    .then(() => client.subscribe('state:bytes', (data) => window.got.binary.push(data instanceof Uint8Array ? Array.from(data) : data)))
    .then(() => { window.ready = true; }, (err) => window.got.errors.push(err.message));
</script>`;
}

describe('browser: MessagePack and deltas in Chromium', function () {
  this.timeout(90000);
  let gw;
  let dir;
  let context;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'browser-encodings-'));
    await writeFile(join(dir, 'gateway.json'), JSON.stringify({ namespaces: [{ name: 'state', delta: true }] }));
    gw = await startGateway(['--config', join(dir, 'gateway.json'), '--max-publish-rate', '100000']);
    context = await chromium.launchPersistentContext(join(dir, 'profile'), { executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  });
  after(async () => {
    await context?.close();
    await gw?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('receives binary data as bytes and rebuilds whole messages from deltas, the libraries loaded from the gateway', async () => {
    const tab = context.pages()[0] ?? (await context.newPage());
    const errors = [];
    tab.on('pageerror', (err) => errors.push(String(err)));
    // A page of another origin than the gateway's (localhost against 127.0.0.1), as an application's would be.
    await tab.goto(`http://localhost:${gw.port}/health`);
    await tab.setContent(page(gw.http, gw.url));
    await tab.waitForFunction(() => window.ready === true, null, { timeout: 20000 }).catch(async (err) => {
      throw new Error(`not subscribed: ${JSON.stringify(await tab.evaluate(() => window.got))} ${errors}: ${err.message}`);
    });

    const publisher = await TestClient.connect(gw.url, { encoding: 'msgpack' });
    try {
      const sent = [];
      const state = { title: 'in the browser', rows: Array.from({ length: 30 }, (_, i) => ({ i, label: `row ${i} ü` })) };
      for (let n = 1; n <= 50; n++) {
        state.rows[n % 30].i = n * 100;
        state.n = n;
        sent.push(JSON.parse(JSON.stringify(state)));
        await publisher.publish('state:browser', state);
      }
      await publisher.publish('state:bytes', Uint8Array.from([0, 255, 7]));
      await eventually(async () => (await tab.evaluate(() => window.got.delta.length)) === sent.length && (await tab.evaluate(() => window.got.binary.length)) === 1, {
        what: 'every message in the page'
      });
      const got = await tab.evaluate(() => window.got);
      expect(got.delta).to.deep.equal(sent);
      expect(got.binary).to.deep.equal([[0, 255, 7]]);
      expect(got.errors).to.deep.equal([]);
      expect(got.transport).to.deep.equal(['websocket']);
      expect(errors).to.deep.equal([]);
      expect(await gw.metric('gateway_deltas_total', '{result="sent"}')).to.be.at.least(sent.length - 1);
    } finally {
      publisher.close();
    }
  });
});
