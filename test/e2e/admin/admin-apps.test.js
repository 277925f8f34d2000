// The admin page sees the apps: their connections and each protocol's
// channels and subscribers, an app's Pusher channels and a presence
// channel's members, an app's Ably channels with their members and last
// messages, and publishes to an app's channel that a pusher-js and an
// ably-js subscriber receive. A real gateway with two apps, a real headless
// Chromium driving the page, real pusher-js and ably-js clients.
import { expect } from 'chai';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { connected, pusherClient, subscribed } from '../../helpers/pusher.js';
import { ablyClients } from '../../helpers/ably.js';

const PASSWORD = 'admin-password-for-the-tests';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const SHOP = { appId: 'shop', key: 'shop-key', secret: 'shop-app-secret-0123456' };
const BLOG = { appId: 'blog', key: 'blog-key', secret: 'blog-app-secret-0123456' };

describe('admin page with apps (Pusher, Ably)', function () {
  this.timeout(120000);
  let gw, browser, page;
  const clients = [];
  const track = (client) => (clients.push(client), client);
  const ably = ablyClients(() => gw);

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
    ably.closeAll();
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
    await eventually(async () => /shop\s+shop-key\s+1\s+2 \/ 2/.test(await text('#apps tbody')), { what: 'the shop app: 1 connection, 2 channels, 2 subscriptions', timeout: 20000 });
    await shows('#apps tbody', 'blog');
    // Native channels by default: none of the app's are there.
    expect(await text('#channels tbody')).not.to.include('orders');
    // The app's name picks its Pusher channels.
    await page.click('#apps tbody button:text("shop")');
    await shows('#channels tbody', 'orders');
    await shows('#channels tbody', 'presence-checkout');
    await page.fill('#watch [name=channel]', 'presence-checkout');
    await page.click('#watch button');
    await shows('#presence tbody', 'buyer-1');
    await shows('#presence tbody', 'Ann');
  });

  it('shows an app\'s Ably channels, a channel\'s members and last messages, and publishes to an ably-js subscriber', async () => {
    const key = `${SHOP.appId}.${SHOP.key}:${SHOP.secret}`;
    const member = ably.realtime({ key, clientId: 'agent-7' });
    const room = member.channels.get('support');
    await room.presence.enter({ desk: 'returns' });
    await room.publish('greeting', { text: 'hello' });
    const watcher = ably.realtime({ key });
    const watched = watcher.channels.get('support');
    const got = [];
    await watched.subscribe((message) => got.push(message));
    // The shop row: Pusher's figures, then Ably's (1 channel, 2 attached connections).
    await eventually(async () => /shop\s+shop-key\s+\d+\s+\d+ \/ \d+\s+1 \/ 2/.test(await text('#apps tbody')), { what: 'the shop app: 1 Ably channel, 2 subscriptions', timeout: 20000 });
    await page.selectOption('#filter [name=app]', 'ably:shop');
    await shows('#channels tbody', 'support');
    expect(await text('#channels tbody')).not.to.include('orders'); // the app's Pusher channel is not among its Ably ones
    await page.fill('#watch [name=channel]', 'support');
    await page.click('#watch button');
    await shows('#presence tbody', 'agent-7');
    await shows('#presence tbody', '{"desk":"returns"}'); // the member's data, sent by ably-js as JSON, shown as it was given
    await shows('#history tbody', 'greeting');
    expect(await text('#history tbody')).not.to.include('"action"'); // presence events are not listed as messages
    await page.fill('#publish [name=channel]', 'support');
    await page.fill('#publish [name=event]', 'notice');
    await page.fill('#publish [name=data]', '{"closing":"17:00"}');
    await page.evaluate(() => (document.querySelector('#publish output').textContent = ''));
    await page.click('#publish button');
    await eventually(async () => !['', '…'].includes(await text('#publish output')), { what: 'the publish answered' });
    expect(await text('#publish output')).to.match(/^done/);
    await eventually(() => got.some((message) => message.name === 'notice'), { what: 'the message at the ably-js subscriber' });
    expect(got.find((message) => message.name === 'notice').data).to.deep.equal({ closing: '17:00' });
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
    await page.selectOption('#filter [name=app]', 'pusher:shop');
    expect(await publish({ channel: 'orders', event: 'order-created', data: '{"id":7}' })).to.match(/^done/);
    await eventually(() => created.length === 1, { what: 'the event at the pusher-js subscriber' });
    expect(created).to.deep.equal([{ id: 7 }]);
    // The native channels again: a channel of the same name is a native one, which the app's subscriber never sees.
    await page.selectOption('#filter [name=app]', '');
    expect(await publish({ channel: 'orders', data: '{"id":8}' })).to.match(/^done/);
    await page.selectOption('#filter [name=app]', 'pusher:shop');
    const marker = new Promise((resolve) => channel.bind('marker', resolve));
    expect(await publish({ channel: 'orders', event: 'marker', data: '{}' })).to.match(/^done/);
    await marker;
    expect(created).to.deep.equal([{ id: 7 }]);
  });
});
