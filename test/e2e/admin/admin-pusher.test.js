// The admin page sees Pusher: its apps (connections, channels and
// subscribers per app), an app's channels and a presence channel's members,
// and a publish to an app's channel with an event name that a pusher-js
// subscriber receives. A real gateway with two Pusher apps, a real headless
// Chromium driving the page, real pusher-js clients.
import { expect } from 'chai';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { connected, pusherClient, subscribed } from '../../helpers/pusher.js';

const PASSWORD = 'admin-password-for-the-tests';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOP = { appId: 'shop', key: 'shop-key', secret: 'shop-app-secret-0123456' };
const BLOG = { appId: 'blog', key: 'blog-key', secret: 'blog-app-secret-0123456' };

describe('admin page with Pusher apps', function () {
  this.timeout(120000);
  let gw, browser, page;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    gw = await startGateway(['--config', configFile({ pusherApps: [SHOP, BLOG] })], { env: { GATEWAY_ADMIN_PASSWORD: PASSWORD } });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    await page.goto(`http://127.0.0.1:${gw.metricsPort}/admin`);
    await page.fill('[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForSelector('#nodes tbody tr');
  });
  after(async () => {
    for (const client of clients) client.disconnect();
    await browser?.close();
    await gw?.stop();
  });

  const text = (selector) => page.locator(selector).innerText();
  const shows = (selector, expected) => eventually(async () => (await text(selector)).includes(expected), { what: `${selector} shows ${expected}`, timeout: 20000 });

  it('lists the apps with their connections and channels, an app\'s channels and a presence channel\'s members', async () => {
    const buyer = track(pusherClient(gw, { app: SHOP, member: { user_id: 'buyer-1', user_info: { name: 'Ann' } } }));
    await connected(buyer);
    await subscribed(buyer, 'orders');
    await subscribed(buyer, 'presence-checkout');
    await connected(track(pusherClient(gw, { app: BLOG })));
    await eventually(async () => /shop\s+shop-key\s+1\s+2\s+2/.test(await text('#apps tbody')), { what: 'the shop app: 1 connection, 2 channels, 2 subscriptions', timeout: 20000 });
    await shows('#apps tbody', 'blog');
    // Native channels by default: none of the app's are there.
    expect(await text('#channels tbody')).not.to.include('orders');
    await page.click('#apps tbody button:text("shop")');
    await shows('#channels tbody', 'orders');
    await shows('#channels tbody', 'presence-checkout');
    await page.fill('#watch [name=channel]', 'presence-checkout');
    await page.click('#watch button');
    await shows('#presence tbody', 'buyer-1');
    await shows('#presence tbody', 'Ann');
  });

  it('publishes an event to a Pusher channel from the page, and a pusher-js subscriber receives it', async () => {
    const client = track(pusherClient(gw, { app: SHOP }));
    const { channel } = await subscribed(client, 'orders');
    const created = [];
    channel.bind('order-created', (data) => created.push(data));
    const publish = async (fields) => {
      for (const [name, value] of Object.entries(fields)) await page.fill(`#publish [name=${name}]`, value);
      await page.evaluate(() => (document.querySelector('#publish output').textContent = ''));
      await page.click('#publish button');
      await eventually(async () => !['', '…'].includes(await text('#publish output')), { what: 'the publish answered' });
      return text('#publish output');
    };
    await page.selectOption('#filter [name=app]', 'shop');
    expect(await publish({ channel: 'orders', event: 'order-created', data: '{"id":7}' })).to.match(/^done/);
    await eventually(() => created.length === 1, { what: 'the event at the pusher-js subscriber' });
    expect(created).to.deep.equal([{ id: 7 }]);
    // The native channels again: a channel of the same name is a native one, which the app's subscriber never sees.
    await page.selectOption('#filter [name=app]', '');
    expect(await publish({ channel: 'orders', data: '{"id":8}' })).to.match(/^done/);
    await page.selectOption('#filter [name=app]', 'shop');
    const marker = new Promise((resolve) => channel.bind('marker', resolve));
    expect(await publish({ channel: 'orders', event: 'marker', data: '{}' })).to.match(/^done/);
    await marker;
    expect(created).to.deep.equal([{ id: 7 }]);
  });
});
