// The client and the status page in a real headless Chromium (Debian's
// package, driven by playwright-core), served by the real gateway.
import { expect } from 'chai';
import { mkdtemp, mkdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { API_KEY, httpPublish, nodeClient } from '../../helpers/client-helpers.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
  '--disable-background-networking', '--disable-component-update', '--disable-sync'
];
const SCREENSHOT = fileURLToPath(new URL('../../artifacts/status.png', import.meta.url));
const DASHBOARD = new URL('../../../scripts/grafana-dashboard.json', import.meta.url);
// The metrics an operator watches first: the dashboard must chart each.
const CHARTED_METRICS = [
  'gateway_connections', 'gateway_connections_opened_total', 'gateway_connections_closed_total', 'gateway_subscriptions',
  'gateway_messages_published_total', 'gateway_messages_delivered_total', 'gateway_messages_dropped_total',
  'gateway_pings_sent_total', 'gateway_peers_terminated_total', 'gateway_gc_runs_total', 'gateway_gc_pause_seconds',
  'gateway_workers', 'gateway_worker_restarts_total', 'gateway_presence_clients', 'gateway_join_leave_sent_total'
];

describe('browser: client and status page in Chromium, Grafana dashboard', function () {
  this.timeout(90000);
  let gw;
  let profile;
  let context;
  let page;
  const pageErrors = [];
  const loaded = [];
  const nodeClients = [];

  before(async () => {
    gw = await startGateway(['--api-key', API_KEY]);
    profile = await mkdtemp(join(tmpdir(), 'gateway-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      args: CHROMIUM_ARGS,
      viewport: { width: 1280, height: 860 }
    });
    page = context.pages()[0] ?? (await context.newPage());
    page.on('pageerror', (err) => pageErrors.push(err));
    page.on('response', (res) => loaded.push([new URL(res.url()).pathname, res.status()]));
    await page.goto(`http://127.0.0.1:${gw.metricsPort}/`); // the status page lives on the metrics listener
    await page.waitForFunction(() => window.gatewayClient?.state === 'open', null, { timeout: 15000 }).catch((err) => {
      const failed = loaded.filter(([, status]) => status >= 400);
      throw new Error(`the page's client did not open (failed loads ${JSON.stringify(failed)}, page errors ${pageErrors}): ${err.message}`);
    });
  });

  after(async () => {
    for (const client of nodeClients) client.close();
    await context?.close();
    if (profile) await rm(profile, { recursive: true, force: true });
    await gw?.stop();
  });

  afterEach(() => expect(pageErrors.map(String)).to.deep.equal([]));

  const log = () => page.locator('#log').textContent();

  it('loads /client.js, subscribes from the page and receives an HTTP publish and its own', async () => {
    expect(loaded).to.deep.include(['/client.js', 200]);
    // Its imports, at the paths their relative specifiers name.
    expect(loaded).to.deep.include.members([['/protocol/validate.js', 200], ['/protocol/presence-hash.js', 200], ['/core/errors.js', 200]]);
    await page.fill('#subscribe [name=channel]', 'browser');
    await page.click('#subscribe button');
    await eventually(async () => (await log()).includes('subscribed to browser'), { what: 'subscribed' });

    await httpPublish(gw, 'browser', { from: 'http' });
    await eventually(async () => (await log()).includes('browser #1  {"from":"http"}'), { what: 'HTTP publish in the page' });

    await page.fill('#publish [name=channel]', 'browser');
    await page.fill('#publish [name=data]', '{"from":"page"}');
    await page.click('#publish button');
    await eventually(async () => (await log()).includes('browser #2  {"from":"page"}'), { what: 'page publish in the page' });
  });

  it('imports /client.js from a page on another origin (CORS) and connects', async () => {
    const other = await context.newPage();
    try {
      await other.goto(`http://localhost:${gw.port}/health`);
      const welcome = await other.evaluate(
        async ({ http, ws }) => {
          const { connect } = await import(`${http}/client.js`);
          const client = connect(ws);
          await new Promise((resolve) => client.on('state', (state) => state === 'open' && resolve()));
          await client.subscribe('cors', () => {});
          const { worker } = client.welcome;
          client.close();
          return { origin: location.origin, worker };
        },
        { http: gw.http, ws: gw.url }
      );
      expect(welcome.origin).to.not.equal(new URL(gw.http).origin);
      expect(welcome.worker).to.be.oneOf([1, 2]);
    } finally {
      await other.close();
    }
  });

  it('reconnects after its worker is SIGKILLed, resubscribes and receives again', async () => {
    const worker = await page.evaluate(() => {
      window.reopened = 0;
      window.gatewayClient.on('state', (state) => state === 'open' && window.reopened++);
      return window.gatewayClient.welcome.worker;
    });
    process.kill(gw.workerPid(worker), 'SIGKILL');
    await page.waitForFunction(() => window.reopened > 0, null, { timeout: 20000 });
    // The resubscribe goes out with the welcome; publish until it has taken.
    await eventually(
      async () => {
        await httpPublish(gw, 'browser', { after: 'kill' });
        return (await log()).includes('{"after":"kill"}');
      },
      { what: 'message after the reconnect', timeout: 15000, interval: 250 }
    );
  });

  it('recovers across a worker kill in the page: every message once, in order, no gap', async () => {
    // A second client in the status page's tab (a tab in the background would be throttled).
    const worker = await page.evaluate(async ({ http, ws }) => {
      const { connect } = await import(`${http}/client.js`);
      const client = connect(ws, { backoffBase: 300 });
      window.recoveryClient = client;
      window.got = [];
      window.gaps = [];
      window.recoveryReopened = 0;
      client.on('gap', (gap) => window.gaps.push(gap));
      await new Promise((resolve) => client.on('state', (state) => state === 'open' && resolve()));
      client.on('state', (state) => state === 'open' && window.recoveryReopened++);
      await client.subscribe('browser-recovery', (data, { seq }) => window.got.push([data, seq]));
      return client.welcome.worker;
    }, { http: gw.http, ws: gw.url });
    await httpPublish(gw, 'browser-recovery', 1);
    await page.waitForFunction(() => window.got.length === 1, null, { timeout: 10000, polling: 100 });
    process.kill(gw.workerPid(worker), 'SIGKILL');
    for (let i = 2; i <= 10; i++) await httpPublish(gw, 'browser-recovery', i); // mostly while it is away
    await page.waitForFunction(() => window.recoveryReopened > 0, null, { timeout: 20000, polling: 100 });
    await httpPublish(gw, 'browser-recovery', 11);
    await page.waitForFunction(() => window.got.length >= 11, null, { timeout: 15000, polling: 100 });
    const { got, gaps } = await page.evaluate(() => {
      window.recoveryClient.close();
      return { got: window.got, gaps: window.gaps };
    });
    expect(got).to.deep.equal(Array.from({ length: 11 }, (_, i) => [i + 1, i + 1]));
    expect(gaps).to.deep.equal([]);
  });

  it('renders figures that match /metrics, and saves a screenshot', async () => {
    // Some load worth showing: three more connections, two channels each, a fan-out.
    for (let i = 0; i < 3; i++) {
      const client = nodeClient(gw.url);
      nodeClients.push(client);
      await Promise.all([client.subscribe('browser', () => {}), client.subscribe(`own-${i}`, () => {})]);
    }
    await httpPublish(gw, 'browser', { fanout: true });

    const shown = (name) => page.locator(`tfoot [data-total=${name}]`).textContent().then((t) => Number(t.replace(/,/g, '')));
    const pairs = [
      ['connections', 'gateway_connections'],
      ['subscriptions', 'gateway_subscriptions'],
      ['published', 'gateway_messages_published_total'],
      ['delivered', 'gateway_messages_delivered_total']
    ];
    let last;
    await eventually(
      async () => {
        last = await Promise.all(pairs.map(async ([field, metric]) => [field, await shown(field), await gw.metric(metric)]));
        return last.every(([, page, metric]) => page === metric) && last[0][1] === 4;
      },
      { what: 'status page = /metrics', timeout: 20000, interval: 250 }
    );

    // A worker restarted by the test above shows up once its first figures arrive.
    const workerRows = async () =>
      (await page.locator('#workers tr').evaluateAll((trs) => trs.map((tr) => [...tr.cells].map((td) => td.textContent)))).map(
        ([worker, pid]) => [Number(worker), Number(pid)]
      );
    await eventually(async () => (await workerRows()).length === 2, { what: 'both workers on the page' });
    expect(await workerRows()).to.deep.equal([
      [1, gw.workerPid(1)],
      [2, gw.workerPid(2)]
    ]);

    await mkdir(new URL('../../artifacts/', import.meta.url), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  it("Chromium's EventSource on another origin receives /sse and, after its worker is killed, recovers what it missed", async () => {
    // The page is on the metrics listener: another origin than the public port.
    const url = `${gw.http}/sse?channels=es-browser`;
    await page.evaluate((u) => {
      window.sse = { events: [], ready: 0 };
      const source = new EventSource(u);
      source.onmessage = (e) => window.sse.events.push({ id: e.lastEventId, ...JSON.parse(e.data) });
      source.addEventListener('ready', () => window.sse.ready++);
      source.addEventListener('gap', (e) => window.sse.events.push({ gap: JSON.parse(e.data).channel }));
      window.sseSource = source;
    }, url);
    const seen = () => page.evaluate(() => window.sse.events);
    await page.waitForFunction(() => window.sse.ready === 1, null, { timeout: 10000 });
    await httpPublish(gw, 'es-browser', 1);
    await eventually(async () => (await seen()).length === 1, { what: 'first event in the page' });

    // Both workers die; the stream's end makes the browser reconnect with Last-Event-ID.
    const before = [gw.workerPid(1), gw.workerPid(2)];
    for (const pid of before) process.kill(pid, 'SIGKILL');
    for (let i = 2; i <= 4; i++) await httpPublish(gw, 'es-browser', i); // retried until a new worker answers
    await eventually(async () => (await seen()).length === 4, { what: 'the missed events after the reconnect', timeout: 20000 });
    const events = await seen();
    expect(events.map((e) => e.seq)).to.deep.equal([1, 2, 3, 4]);
    expect(events.map((e) => e.data)).to.deep.equal([1, 2, 3, 4]);
    expect(await page.evaluate(() => window.sse.ready)).to.equal(2);
    await page.evaluate(() => window.sseSource.close());
  });

  it('has a Grafana dashboard that charts the metrics an operator watches first, with names /metrics really exposes', async () => {
    const dashboard = JSON.parse(await readFile(DASHBOARD, 'utf8'));
    const exprs = dashboard.panels.flatMap((panel) => panel.targets.map((target) => target.expr));
    const used = new Set(exprs.flatMap((expr) => expr.match(/\b(gateway|nodejs|process)_[a-z0-9_]+/g)));
    const exposed = new Set(
      (await gw.metrics()).split('\n').filter((l) => l.startsWith('# TYPE ')).map((l) => l.split(' ')[2])
    );
    const histogramPart = /_(bucket|sum|count)$/;
    const missing = [...used].filter((name) => !exposed.has(name) && !exposed.has(name.replace(histogramPart, '')));
    expect(missing, 'charted but not exposed').to.deep.equal([]);
    const base = new Set([...used].map((name) => name.replace(histogramPart, '')));
    expect(CHARTED_METRICS.filter((name) => !base.has(name)), 'not charted').to.deep.equal([]);
  });
});
