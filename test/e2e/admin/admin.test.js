// The admin page: a real gateway (--auth jwt, presence namespaces, the
// password in GATEWAY_ADMIN_PASSWORD) driven from a real headless Chromium
// (Debian's package, through playwright-core), real clients on the public
// port, and plain HTTP for what a browser would not send.
import { expect } from 'chai';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { configFile } from '../../helpers/api.js';
import { SECRET } from '../../helpers/tokens.js';
import { PRESENCE_NAMESPACES, member } from '../../helpers/presence.js';

const PASSWORD = 'admin-password-for-the-tests';
const XSS = '<img src=x onerror=alert(1)>';
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const ARTIFACTS = fileURLToPath(new URL('../../artifacts/', import.meta.url));

describe('admin page', function () {
  this.timeout(120000);
  let gw;
  let base; // the metrics listener, where /admin lives
  let browser;
  let page;
  const dialogs = [];
  const pageErrors = [];
  const refusedByCsp = []; // a resource the page's own Content-Security-Policy refuses
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    const args = ['--config', configFile(PRESENCE_NAMESPACES), '--auth', 'jwt', '--jwt-secret', SECRET];
    gw = await startGateway(args, { env: { GATEWAY_ADMIN_PASSWORD: PASSWORD } });
    base = `http://127.0.0.1:${gw.metricsPort}`;
    await mkdir(ARTIFACTS, { recursive: true });
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
    page = await (await browser.newContext({ viewport: { width: 1280, height: 900 } })).newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      dialog.dismiss();
    });
    page.on('pageerror', (err) => pageErrors.push(String(err)));
    page.on('console', (message) => message.text().includes('Content Security Policy') && refusedByCsp.push(message.text()));
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client.close();
  });
  after(async () => {
    await browser?.close();
    await gw?.stop();
  });

  const text = (selector) => page.locator(selector).innerText();
  // The page polls every second and the workers report every second: a busy machine may take a few rounds.
  const shows = (selector, expected, what) => eventually(async () => (await text(selector)).includes(expected), { what: what ?? `${selector} shows ${expected}`, timeout: 20000 });
  /** Fills an action's form, sends it, and resolves with the answer the page shows. */
  async function act(form, fields) {
    for (const [name, value] of Object.entries(fields)) await page.fill(`#${form} [name=${name}]`, value);
    await page.click(`#${form} button`);
    await eventually(async () => !['', '…'].includes(await text(`#${form} output`)), { what: `${form} answered` });
    return text(`#${form} output`);
  }
  async function watch(channel) {
    await page.fill('#watch [name=channel]', channel);
    await page.click('#watch button');
  }
  async function logIn() {
    await page.context().clearCookies();
    await page.goto(`${base}/admin`);
    await page.fill('[name=password]', PASSWORD);
    await page.click('button[type=submit]');
    await page.waitForSelector('#nodes tbody tr');
  }

  it('keeps the password out of the workers and the log', () => {
    const environ = (pid) => readFileSync(`/proc/${pid}/environ`, 'utf8');
    expect(environ(gw.proc.pid)).to.include(PASSWORD); // the primary was given it
    for (const worker of [1, 2]) {
      expect(environ(gw.workerPid(worker))).to.not.include(PASSWORD);
      expect(readFileSync(`/proc/${gw.workerPid(worker)}/cmdline`, 'utf8')).to.not.include(PASSWORD);
    }
    expect(JSON.stringify(gw.logs) + gw.stderr).to.not.include(PASSWORD);
  });

  it('logs in, sees a client, publishes to it, unsubscribes and disconnects its user, logs out', async () => {
    await page.goto(`${base}/admin`);
    await page.fill('[name=password]', 'not-the-password');
    await page.click('button[type=submit]');
    expect(await text('#problem')).to.equal('Wrong password.');
    await page.screenshot({ path: `${ARTIFACTS}admin-login.png` });
    await logIn();

    const alice = track(await member(gw.url, 'alice', { info: { name: 'Alice' } }));
    expect((await alice.subscribe('room:lobby')).type).to.equal('ack');
    await shows('#nodes tbody', '\t1\t0\t1\t', 'the node with one WebSocket, no stream, one subscription');
    await shows('#channels tbody', 'room:lobby\t1');
    await page.click('#channels tbody button');
    await shows('#presence tbody', 'alice\t{"name":"Alice"}');

    expect(await act('publish', { channel: 'room:lobby', data: '{"text":"hello from the admin"}' })).to.match(/^done: \{"seq":1,"epoch":"[^"]+"\}$/);
    const message = await alice.next((f) => f.type === 'message');
    expect(message).to.include({ channel: 'room:lobby', seq: 1 });
    expect(message.data).to.deep.equal({ text: 'hello from the admin' });
    await shows('#history tbody', '1\t{"text":"hello from the admin"}');
    await page.screenshot({ path: `${ARTIFACTS}admin-desktop.png`, fullPage: true });
    await page.setViewportSize({ width: 390, height: 844 });
    await page.screenshot({ path: `${ARTIFACTS}admin-phone.png`, fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });

    expect(await act('unsubscribe', { user: 'alice', channel: 'room:lobby' })).to.equal('done: {"unsubscribed":1}');
    await alice.next((f) => f.type === 'unsubscribed' && f.channel === 'room:lobby');
    expect(await act('disconnect', { user: 'alice', reason: 'shown the door' })).to.equal('done: {"disconnected":1}');
    expect(await alice.closed).to.deep.equal({ code: 4004, reason: 'shown the door' });
    await shows('#nodes tbody', '\t0\t0\t0\t', 'the node with no connection left');

    const cookie = (await page.context().cookies()).find((c) => c.name === 'gateway_admin');
    expect(cookie).to.include({ httpOnly: true, sameSite: 'Strict', path: '/admin' });
    await page.click('#logout');
    await page.waitForSelector('[name=password]');
    expect((await get('/admin/api/view', { cookie: `gateway_admin=${cookie.value}` })).status).to.equal(401); // ended, not just forgotten by the browser
    expect(pageErrors).to.deep.equal([]);
    expect(refusedByCsp).to.deep.equal([]);
  });

  it("answers an invalid channel, a bad user and bad JSON with the server API's own error", async () => {
    await logIn();
    expect(await act('publish', { channel: 'no spaces allowed', data: '1' })).to.match(/^invalid_channel: channel must be/);
    expect(await act('publish', { channel: 'nowhere:x', data: '1' })).to.equal('invalid_channel: unknown namespace in nowhere:x');
    expect(await act('publish', { channel: 'room:a', data: '{not json' })).to.equal('bad_request: body is not valid JSON');
    expect(await act('disconnect', { user: 'x'.repeat(200), reason: '' })).to.match(/^bad_request: user must be a string of 1 to \d+ characters$/);
    expect(await act('disconnect', { user: 'nobody-here', reason: '' })).to.equal('done: {"disconnected":0}'); // the API's answer for a user with no connection
    await watch('plain:x');
    await shows('#presence-error', 'bad_request: no presence on plain:x');
    await page.fill('#watch [name=limit]', '0');
    await watch('room:a');
    await shows('#history-error', 'bad_request: limit must be an integer from 1 to the history size, 100');
    await page.fill('#watch [name=limit]', '20');
    expect(pageErrors).to.deep.equal([]);
  });

  it("shows a member's info and a message's data holding HTML as text, never runs them", async () => {
    await logIn();
    const mallory = track(await member(gw.url, 'mallory', { info: { name: XSS } }));
    await mallory.subscribe('room:xss');
    await watch('room:xss');
    await shows('#presence tbody', `mallory\t{"name":"${XSS}"}`);
    expect(await act('publish', { channel: 'room:xss', data: JSON.stringify({ text: XSS }) })).to.match(/^done: /);
    await shows('#history tbody', `{"text":"${XSS}"}`);
    await page.screenshot({ path: `${ARTIFACTS}admin-xss.png`, fullPage: true });
    expect(await page.locator('img').count()).to.equal(0);
    expect(dialogs).to.deep.equal([]);
    expect(pageErrors).to.deep.equal([]);
  });

  it('refuses a cross-site form post from another origin, and a POST whose Origin is elsewhere or missing; nothing is done', async () => {
    const session = await logInOverHttp();
    // A page on another origin posting to the admin page, as a forged form would.
    const evil = http.createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html' });
      res.end(`<form method="post" action="${base}/admin/api/publish" enctype="text/plain"><input name='{"channel":"room:csrf","data":1,"x":"' value='"}'><button>go</button></form>`);
    });
    await new Promise((resolve) => evil.listen(0, '127.0.0.1', resolve));
    try {
      await page.goto(`http://localhost:${evil.address().port}/`);
      await Promise.all([page.waitForURL(`${base}/admin/api/publish`), page.click('button')]);
      expect(await page.locator('body').innerText()).to.include('cross-site request refused');
    } finally {
      evil.close();
    }
    for (const origin of ['http://evil.example', `http://127.0.0.1:${gw.metricsPort + 1}`, undefined]) {
      const answer = await post('/admin/api/publish', JSON.stringify({ channel: 'room:csrf', data: 1 }), { cookie: session, origin });
      expect(answer.status, `Origin ${origin}`).to.equal(403);
      expect(JSON.parse(answer.body).error.code).to.equal('forbidden');
    }
    expect((await post('/admin/login', `password=${PASSWORD}`, { origin: 'http://evil.example' })).status).to.equal(403);
    const view = JSON.parse((await get('/admin/api/view?channel=room:csrf', { cookie: session })).body);
    expect(view.history.result).to.include({ seq: 0 });
  });

  it('refuses no session, a forged one and a tampered one, and a method it does not serve', async () => {
    const session = await logInOverHttp();
    const [id, expires, signature] = session.slice('gateway_admin='.length).split('.');
    const forged = `gateway_admin=${id}.${expires}.${Buffer.alloc(32, 7).toString('base64url')}`;
    const longer = `gateway_admin=${id}.${Number(expires) + 3600000}.${signature}`;
    for (const cookie of [undefined, 'gateway_admin=', 'gateway_admin=abc', forged, longer]) {
      expect((await get('/admin/api/view', { cookie })).status, String(cookie)).to.equal(401);
      const answer = await post('/admin/api/publish', '{"channel":"room:forged","data":1}', { cookie });
      expect(answer.status, String(cookie)).to.equal(401);
    }
    expect((await get('/admin/api/view', { cookie: session })).status).to.equal(200);
    // a route that does not exist is 404 with a session or without
    for (const cookie of [undefined, session]) {
      for (const path of ['/admin/nope', '/admin/api/nope']) expect((await get(path, { cookie })).status, `${path} ${cookie}`).to.equal(404);
    }
    const put = await request('PUT', '/admin/api/view', undefined, { cookie: session });
    expect([put.status, put.headers.allow, JSON.parse(put.body).error.code]).to.deep.equal([405, 'GET, POST', 'method_not_allowed']);
    const login = await get('/admin', { cookie: forged });
    expect(login.body).to.include('name="password"'); // the login form, not the page
    expect(login.headers['content-security-policy']).to.include("script-src 'self'").and.not.include('unsafe-inline');
  });

  it('locks an address out after five wrong passwords in a minute, counted; other addresses still log in', async () => {
    const from = '127.0.0.2';
    const counted = async (result) => (await gw.metric('gateway_admin_logins_total', `{result="${result}"}`)) ?? 0;
    const [wrong, locked] = [await counted('wrong'), await counted('locked')];
    for (let i = 0; i < 5; i++) expect((await post('/admin/login', 'password=guess', { from })).status).to.equal(401);
    const refused = await post('/admin/login', `password=${PASSWORD}`, { from });
    expect(refused.status).to.equal(429);
    expect(refused.headers['retry-after']).to.equal('60');
    expect(refused.headers['set-cookie']).to.equal(undefined);
    expect(await counted('wrong')).to.equal(wrong + 5);
    expect(await counted('locked')).to.equal(locked + 1);
    expect((await post('/admin/login', `password=${PASSWORD}`)).status).to.equal(303);
  });

  it('answers while a worker dies: a part it held is unavailable, never a hang; then whole again', async () => {
    const session = await logInOverHttp();
    const parts = async () => {
      const answer = await get('/admin/api/view?channel=room:a', { cookie: session });
      expect(answer.status).to.equal(200);
      const { info, channels, presence, history } = JSON.parse(answer.body);
      return [info, channels, presence, history];
    };
    const old = gw.workerPid(1);
    process.kill(old, 'SIGKILL');
    const during = (await Promise.all([parts(), parts(), parts()])).flat();
    for (const part of during) expect(part.result !== undefined || part.error?.code === 'unavailable', JSON.stringify(part)).to.equal(true);
    await gw.waitForLog((l) => l.msg === 'worker ready' && l.worker === 1 && l.workerPid !== old, 20000);
    await eventually(async () => (await parts()).every((part) => part.result !== undefined), { what: 'every part answered' });
  });

  it('refuses a short --admin-password at start', async () => {
    const err = await startGateway([], { env: { GATEWAY_ADMIN_PASSWORD: 'too-short' } }).then(
      (other) => other.stop().then(() => null),
      (e) => e
    );
    expect(err?.message).to.include('--admin-password (from GATEWAY_ADMIN_PASSWORD) must be at least 12 characters');
    expect(err.message).to.not.include('too-short');
  });

  /** GET on the metrics listener, from `from`. */
  function get(path, { cookie, from } = {}) {
    return request('GET', path, undefined, { cookie, from });
  }
  /** POST a body; the Origin is the admin page's own unless given (undefined: none at all). */
  function post(path, body, options = {}) {
    const { cookie, from } = options;
    const origin = 'origin' in options ? options.origin : base;
    return request('POST', path, body, { cookie, from, origin });
  }
  function request(method, path, body, { cookie, from = '127.0.0.1', origin }) {
    const headers = {};
    if (cookie !== undefined) headers.cookie = cookie;
    if (origin !== undefined) headers.origin = origin;
    return new Promise((resolve, reject) => {
      const req = http.request(`${base}${path}`, { method, headers, localAddress: from }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (text += chunk));
        res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
      });
      req.on('error', reject);
      req.end(body);
    });
  }
  /** @returns {Promise<string>} a session's Cookie header */
  async function logInOverHttp() {
    const answer = await post('/admin/login', `password=${PASSWORD}`);
    expect(answer.status).to.equal(303);
    return answer.headers['set-cookie'][0].split(';', 1)[0];
  }
});

describe('admin page: off without --admin-password', function () {
  this.timeout(60000);
  let gw;
  after(() => gw?.stop());

  it('answers 404 under /admin, and the password flag never reaches a worker', async () => {
    gw = await startGateway();
    for (const path of ['/admin', '/admin/admin.js', '/admin/api/view']) expect((await fetch(`http://127.0.0.1:${gw.metricsPort}${path}`)).status, path).to.equal(404);
    const login = await fetch(`http://127.0.0.1:${gw.metricsPort}/admin/login`, { method: 'POST', body: `password=${PASSWORD}` });
    expect(login.status).to.equal(404);
    await gw.stop();
    gw = await startGateway(['--admin-password', PASSWORD, '--workers', '1']);
    const cmdline = readFileSync(`/proc/${gw.workerPid(1)}/cmdline`, 'utf8').split('\0');
    expect(cmdline).to.not.include(PASSWORD);
    expect(cmdline).to.not.include('--admin-password');
  });
});
