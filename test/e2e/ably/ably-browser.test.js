// ably-js's browser build in Chromium against a real gateway: it connects
// (JSON or MessagePack, with protocol heartbeats asked for, as browsers do), attaches and
// receives a message published over REST from Node; then it stays connected
// through a silence longer than its idle timeout (maxIdleInterval, here a
// 1 s ping interval, plus its realtimeRequestTimeout, here 2 s), which only the HEARTBEATs the
// gateway sends with its pings can hold: a browser sees no WebSocket ping.
// The page is served from another origin, so its REST calls (the channel's
// history) go through CORS as a site's would.
import { createServer } from 'node:http';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import Ably from 'ably';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { APP } from '../../helpers/pusher.js';

const KEY = `${APP.appId}.${APP.key}:${APP.secret}`;
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ABLY_BROWSER = fileURLToPath(new URL('../../../node_modules/ably/build/ably.js', import.meta.url));
const PING_MS = 1000;
const REQUEST_TIMEOUT_MS = 2000; // ably-js's realtimeRequestTimeout, shortened: the idle timeout's margin
const IDLE_TIMEOUT_MS = PING_MS + REQUEST_TIMEOUT_MS; // ably-js: maxIdleInterval + realtimeRequestTimeout

describe('Ably protocol (ably-js in Chromium)', function () {
  this.timeout(60000);
  let gw;
  let browser;
  let site; // the page's own origin

  before(async () => {
    gw = await startGateway(['--config', configFile({ pusherApps: [APP] }), '--ping-interval', String(PING_MS)]);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    site = createServer((req, res) => res.writeHead(200, { 'Content-Type': 'text/html' }).end('<!doctype html><title>site</title>'));
    site.listen(0, '127.0.0.1');
    await once(site, 'listening');
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
    site?.close();
  });

  for (const binary of [false, true]) {
    it(`receives a message, and stays connected through a silence past its idle timeout (${binary ? 'msgpack' : 'json'})`, async () => {
      const channel = `to-the-browser-${binary ? 'msgpack' : 'json'}`;
      const tab = await browser.newPage();
      const errors = [];
      tab.on('pageerror', (err) => errors.push(String(err)));
      await tab.goto(`http://127.0.0.1:${site.address().port}/`);
      await tab.addScriptTag({ path: ABLY_BROWSER });
      await tab.evaluate(
        ({ key, port, requestTimeout, binary, channel }) =>
          new Promise((resolve, reject) => {
            window.got = [];
            window.states = [];
            // A key in a page only because the gateway takes one from this machine: a real page gets a token.
            const client = new window.Ably.Realtime({ key, endpoint: '127.0.0.1', port, tls: false, disableConnectivityCheck: true, realtimeRequestTimeout: requestTimeout, useBinaryProtocol: binary });
            window.client = client;
            client.connection.on((change) => window.states.push(change.current));
            client.channels
              .get(channel)
              .subscribe((message) => window.got.push(message.data))
              .then(() => resolve(client.connection.id), reject);
          }),
        { key: KEY, port: gw.port, requestTimeout: REQUEST_TIMEOUT_MS, binary, channel }
      );
      const connectionId = await tab.evaluate(() => window.client.connection.id);
      const rest = new Ably.Rest({ key: KEY, endpoint: '127.0.0.1', port: gw.port, tls: false, logLevel: 0 });
      await rest.channels.get(channel).publish('greeting', { hello: 'browser' });
      await eventually(async () => (await tab.evaluate(() => window.got.length)) === 1, { what: 'the message in the page', timeout: 10000 });
      expect(await tab.evaluate(() => window.got)).to.deep.equal([{ hello: 'browser' }]);
      // REST from the page, across origins: the history, and its link to a next page read through CORS.
      await rest.channels.get(channel).publish('second', 'two');
      const pages = await tab.evaluate(async (name) => {
        const page = await window.client.channels.get(name).history({ limit: 1 });
        const next = await page.next();
        return [page.items.map((m) => m.data), next?.items.map((m) => m.data)];
      }, channel);
      expect(pages).to.deep.equal([['two'], [{ hello: 'browser' }]]);
      // Silence, then a second message: received on the same connection, never disconnected meanwhile.
      await new Promise((resolve) => setTimeout(resolve, IDLE_TIMEOUT_MS + 1500));
      await rest.channels.get(channel).publish('again', 'still here');
      await eventually(async () => (await tab.evaluate(() => window.got.length)) === 3, { what: 'the third message', timeout: 10000 });
      expect(await tab.evaluate(() => window.client.connection.id)).to.equal(connectionId);
      expect(await tab.evaluate(() => window.states)).to.deep.equal(['connecting', 'connected']);
      expect(errors).to.deep.equal([]);
    });
  }
});
