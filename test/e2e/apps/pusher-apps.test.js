// Pusher apps from PostgreSQL (--apps-database): a real PostgreSQL, a real
// gateway (2 workers) and the real pusher-js and `pusher` SDK. The table is
// made by the gateway; apps added, changed, disabled and removed while it
// runs take effect on every worker without a restart (Ably's connections
// too); a bad row is refused
// alone; the flags' app keeps working beside the table; the database lost
// leaves the loaded apps working and /health degraded; `gateway apps`
// manages the table from the command line.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { once } from 'node:events';
import WebSocket from 'ws';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { PostgresServer } from '../../../scripts/harness/postgres.js';
import { APP, connected, eventually, outcome, pusherClient, RawPusher, serverSdk, startPusherGateway, subscribed } from '../../helpers/pusher.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const run = promisify(execFile);
const SECRET = 'a-database-secret-0123456789';
const row = (id, key, more = {}) => ({ id, key, secret: SECRET, ...more });

async function insert(pg, app) {
  const columns = Object.keys(app);
  const values = columns.map((c) => (c === 'webhooks' ? JSON.stringify(app[c]) : app[c]));
  await pg.query(`INSERT INTO gateway_apps (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, values);
}


describe('Pusher apps from PostgreSQL', function () {
  this.timeout(60000);
  let pg, gw;
  const clients = [];
  const track = (client) => (clients.push(client), client);

  before(async () => {
    pg = await PostgresServer.start();
    // The gateway makes the table; a first one makes it here to hold rows before it starts.
    const first = await startGateway([], { env: { GATEWAY_APPS_DATABASE: pg.url } });
    await first.stop();
    await insert(pg, row('db-1', 'db-key-1', { client_events: true }));
    // Rows the table's constraints now refuse, written as under a table made before them:
    // the next start brings the table up to date without reading them again, and refuses them alone.
    await pg.query(
      'ALTER TABLE gateway_apps DROP CONSTRAINT gateway_apps_secret_valid, DROP CONSTRAINT gateway_apps_max_connections_valid, DROP CONSTRAINT gateway_apps_webhooks_valid'
    );
    await insert(pg, row('short', 'short-key', { secret: 'too-short' }));
    await insert(pg, row('neg', 'neg-key', { max_connections: -1 }));
    await insert(pg, row('many', 'many-key', { webhooks: Array.from({ length: 101 }, (_, i) => ({ url: `http://127.0.0.1:1/${i}` })) }));
    await pg.query('COMMENT ON TABLE gateway_apps IS NULL');
    await insert(pg, row(APP.appId, 'clash-key')); // the flags' app's id
    await insert(pg, row('hooks', 'hooks-key', { webhooks: [{ url: 'http://127.0.0.1:1/x', events: ['channel_occupied', 'no_such_event'] }] }));
    gw = await startPusherGateway(['--apps-database', pg.url]);
  });
  after(async () => {
    await gw?.stop();
    await pg?.remove();
  });
  afterEach(() => {
    for (const client of clients.splice(0)) client instanceof RawPusher ? client.close() : client.disconnect();
  });

  it('serves the table\'s apps beside the flags\' one, refusing each bad row alone with a log line naming it', async () => {
    const client = track(pusherClient(gw, { app: { appId: 'db-1', key: 'db-key-1', secret: SECRET } }));
    await connected(client);
    const { channel } = await subscribed(client, 'orders');
    const got = new Promise((resolve) => channel.bind('created', resolve));
    const res = await serverSdk(gw, { appId: 'db-1', key: 'db-key-1', secret: SECRET }).trigger('orders', 'created', { id: 1 });
    expect(res.status).to.equal(200);
    expect(await got).to.deep.equal({ id: 1 });
    await connected(track(pusherClient(gw))); // the flags' app
    const refused = gw.logs.filter((l) => l.msg?.startsWith('Pusher app refused'));
    const named = (id) => refused.find((l) => l.app === `gateway_apps row "${id}"`);
    expect(named('short').problem).to.include('secret must be a string of at least 16 characters');
    expect(named('neg').problem).to.include('maxConnections must be an integer from 0');
    expect(named(APP.appId).problem).to.equal(`appId ${APP.appId} is defined twice: --pusher-* and gateway_apps row "${APP.appId}"`);
    expect(named('hooks').problem).to.include('"no_such_event" is not one of');
    expect(named('many').problem).to.equal('webhooks holds 101 targets: at most 100 (each is sent every event it asks for)');
    expect(gw.logs.filter((l) => l.msg === 'apps table brought to schema 3 (was 1)')).to.have.length(1);
    expect(await outcome(gw, 'short-key')).to.equal(4001);
    expect(await outcome(gw, 'clash-key')).to.equal(4001);
  });

  it('takes an app added while it runs on every worker, without a restart', async () => {
    await insert(pg, row('late', 'late-key'));
    // Both workers: a few connections land on each under --balance ip's spread.
    await eventually(async () => (await outcome(gw, 'late-key')) === 'established', { what: 'the added app accepted' });
    const outcomes = await Promise.all(Array.from({ length: 6 }, () => outcome(gw, 'late-key')));
    expect(outcomes).to.deep.equal(Array(6).fill('established'));
  });

  it('closes a disabled app\'s connections with 4003 and refuses new ones, then takes it back', async () => {
    await insert(pg, row('dis', 'dis-key'));
    await eventually(async () => (await outcome(gw, 'dis-key')) === 'established', { what: 'the app served' });
    const raws = await Promise.all(Array.from({ length: 4 }, () => RawPusher.open(gw, { key: 'dis-key' }).then(track)));
    for (const raw of raws) await raw.event('pusher:connection_established');
    await pg.query("UPDATE gateway_apps SET enabled = false WHERE id = 'dis'");
    for (const raw of raws) {
      expect((await raw.closed).code).to.equal(4003);
      expect((await raw.event('pusher:error')).data.code).to.equal(4003);
    }
    expect(await outcome(gw, 'dis-key')).to.equal(4003);
    await pg.query("UPDATE gateway_apps SET enabled = true WHERE id = 'dis'");
    await eventually(async () => (await outcome(gw, 'dis-key')) === 'established', { what: 'the app enabled again' });
  });

  it('closes a disabled or removed app\'s Ably connections, told in-band with 40101', async () => {
    await insert(pg, row('ably-app', 'ably-key'));
    const ably = async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(`ably-app.ably-key:${SECRET}`)}`);
      const frames = [];
      ws.on('message', (data) => frames.push(JSON.parse(String(data))));
      const closed = once(ws, 'close');
      await eventually(() => frames.length > 0, { what: 'an answer to the connection' });
      return { ws, frames, closed };
    };
    const served = async () => {
      const { ws, frames } = await ably();
      ws.close();
      return frames[0].action === 4;
    };
    await eventually(served, { what: 'the app served to Ably' });
    for (const change of ["UPDATE gateway_apps SET enabled = false WHERE id = 'ably-app'", "DELETE FROM gateway_apps WHERE id = 'ably-app'"]) {
      const conn = await ably();
      expect(conn.frames[0].action).to.equal(4); // CONNECTED
      await pg.query(change);
      await conn.closed;
      expect(conn.frames.at(-1)).to.deep.include({ action: 9 });
      expect(conn.frames.at(-1).error).to.include({ code: 40101, statusCode: 401 });
      // A new connection with the same key is refused the same way.
      const again = await ably();
      expect(again.frames[0].error?.code).to.equal(40101);
      await again.closed;
      if (!change.startsWith('UPDATE')) continue;
      await pg.query("UPDATE gateway_apps SET enabled = true WHERE id = 'ably-app'");
      await eventually(served, { what: 'the app enabled again' });
    }
  });

  it('holds an open Ably connection to its key as the apps table changes it: a capability narrowed applies (its members gone), a key removed closes it', async () => {
    const watch = { keyId: 'watch', secret: SECRET, capability: { '*': ['subscribe'] } };
    await insert(pg, row('ably-keys', 'ably-keys-key', { ably_keys: JSON.stringify([{ keyId: 'extra', secret: SECRET, capability: { '*': ['*'] } }, watch]) }));
    const open = async (keyId, query = '') => {
      const ws = new WebSocket(`ws://127.0.0.1:${gw.port}/?v=6&format=json&key=${encodeURIComponent(`ably-keys.${keyId}:${SECRET}`)}${query}`);
      const frames = [];
      ws.on('message', (data) => frames.push(JSON.parse(String(data))));
      await eventually(() => frames.length > 0, { what: 'an answer to the connection' });
      return { ws, frames, closed: once(ws, 'close') };
    };
    await eventually(async () => {
      const { ws, frames } = await open('extra');
      ws.close();
      return frames[0].action === 4;
    }, { what: 'the further key served' });
    const own = await open('ably-keys-key', '&clientId=agent');
    const extra = await open('extra');
    // The own key's connection is present on a channel its narrowed capability will not cover.
    own.ws.send(JSON.stringify({ action: 14, channel: 'closed', msgSerial: 0, presence: [{ action: 2, data: 'here' }] }));
    await eventually(() => own.frames.some((f) => f.action === 1 && f.msgSerial === 0), { what: 'the enter acknowledged' });
    const present = async () => {
      const res = await fetch(`http://127.0.0.1:${gw.port}/channels/closed/presence`, { headers: { authorization: `Basic ${Buffer.from(`ably-keys.watch:${SECRET}`).toString('base64')}` } });
      return (await res.json()).map((member) => member.clientId);
    };
    await eventually(async () => (await present()).includes('agent'), { what: 'the member present' });
    await pg.query(`UPDATE gateway_apps SET ably_capability = '{"open:*": ["*"]}', ably_keys = $1 WHERE id = 'ably-keys'`, [JSON.stringify([watch])]);
    // The further key is gone: its connection told 40101 and closed.
    await extra.closed;
    expect(extra.frames.at(-1).error).to.include({ code: 40101 });
    // The own key's connection is held to the narrowed capability from its next attach.
    await eventually(async () => {
      own.frames.length = 0;
      own.ws.send(JSON.stringify({ action: 10, channel: 'closed' }));
      await eventually(() => own.frames.some((f) => f.channel === 'closed'), { what: 'the attach answered' });
      return own.frames.find((f) => f.channel === 'closed').action === 9;
    }, { what: 'the narrowed capability applied' });
    expect(own.frames.find((f) => f.channel === 'closed').error).to.include({ code: 40160 });
    // Its member where it may no longer be present is gone, its connection still open.
    await eventually(async () => (await present()).length === 0, { what: 'the member gone' });
    own.ws.send(JSON.stringify({ action: 10, channel: 'open:x' }));
    await eventually(() => own.frames.some((f) => f.action === 11 && f.channel === 'open:x'), { what: 'an attach within it' });
    own.ws.close();
  });

  it('closes a removed app\'s connections with 4001, leaving nothing of it in presence', async () => {
    const app = { appId: 'gone', key: 'gone-key', secret: SECRET };
    await insert(pg, row(app.appId, app.key));
    await eventually(async () => (await outcome(gw, app.key)) === 'established', { what: 'the app served' });
    const client = track(pusherClient(gw, { app, member: { user_id: 'u1' } }));
    await subscribed(client, 'presence-room');
    const closed = new Promise((resolve) => client.connection.bind('state_change', ({ current }) => current === 'failed' || current === 'disconnected' ? resolve(current) : undefined));
    const raw = track(await RawPusher.open(gw, { key: app.key }));
    await raw.event('pusher:connection_established');
    await pg.query("DELETE FROM gateway_apps WHERE id = 'gone'");
    expect((await raw.closed).code).to.equal(4001);
    await closed; // pusher-js does not reconnect after 4001
    // Put back, the app starts empty: no member of before in its presence channel.
    await insert(pg, row(app.appId, app.key));
    await eventually(async () => (await outcome(gw, app.key)) === 'established', { what: 'the app back' });
    const users = await serverSdk(gw, app).get({ path: '/channels/presence-room/users' });
    expect((await users.json()).users).to.deep.equal([]);
  });

  it('signs with a changed secret at once: the old one gets 401', async () => {
    const app = { appId: 'rot', key: 'rot-key', secret: SECRET };
    await insert(pg, row(app.appId, app.key));
    await eventually(async () => (await serverSdk(gw, app).trigger('x', 'e', {}).then((r) => r.status, (e) => e.status)) === 200, { what: 'the app served' });
    const secret = 'the-rotated-secret-0123456789';
    await pg.query('UPDATE gateway_apps SET secret = $1 WHERE id = $2', [secret, app.appId]);
    await eventually(async () => (await serverSdk(gw, { ...app, secret }).trigger('x', 'e', {}).then((r) => r.status, (e) => e.status)) === 200, { what: 'the new secret' });
    expect(await serverSdk(gw, app).trigger('x', 'e', {}).then((r) => r.status, (e) => e.status)).to.equal(401);
  });

  it('coalesces a storm of changes: 1,000 updates in one statement hold on every worker', async () => {
    await pg.query("INSERT INTO gateway_apps (id, key, secret) SELECT 'storm-' || i, 'storm-key-' || i, $1 FROM generate_series(1, 1000) AS i", [SECRET]);
    await eventually(async () => (await outcome(gw, 'storm-key-1000')) === 'established', { what: 'the 1,000 apps' });
    await pg.query("UPDATE gateway_apps SET enabled = false WHERE id LIKE 'storm-%'");
    await eventually(async () => (await outcome(gw, 'storm-key-500')) === 4003, { what: 'the 1,000 apps disabled' });
    await pg.query("DELETE FROM gateway_apps WHERE id LIKE 'storm-%'");
    await eventually(async () => (await outcome(gw, 'storm-key-1')) === 4001, { what: 'the 1,000 apps removed' });
  });

  it('keeps the loaded apps while the database is down, says degraded, and follows it again once back', async () => {
    await pg.stop();
    await eventually(async () => (await gw.request('/health')).body.status === 'degraded', { what: '/health degraded' });
    expect(await outcome(gw, 'db-key-1')).to.equal('established');
    await pg.start();
    await eventually(async () => (await gw.request('/health')).body.status === 'ok', { what: '/health ok again', timeout: 20000 });
    await insert(pg, row('after', 'after-key'));
    await eventually(async () => (await outcome(gw, 'after-key')) === 'established', { what: 'an app added after the outage' });
  });

  it('manages the table with `gateway apps`: add prints the secret once, and the app works at once', async () => {
    const env = { ...process.env, GATEWAY_APPS_DATABASE: pg.url };
    const { stdout } = await run(process.execPath, [GATEWAY, 'apps', 'add', '--id', 'cli', '--key', 'cli-key', '--client-events'], { env });
    const secret = /secret: (\S+)/.exec(stdout)[1];
    const app = { appId: 'cli', key: 'cli-key', secret };
    await eventually(async () => (await serverSdk(gw, app).trigger('x', 'e', {}).then((r) => r.status, (e) => e.status)) === 200, { what: 'the added app' });
    const listed = JSON.parse((await run(process.execPath, [GATEWAY, 'apps', 'list', '--json'], { env })).stdout);
    const cli = listed.find((one) => one.appId === 'cli');
    expect(cli).to.include({ key: 'cli-key', clientEvents: true, enabled: true });
    expect(JSON.stringify(listed)).not.to.include(secret);
    await run(process.execPath, [GATEWAY, 'apps', 'set', '--id', 'cli', '--enabled=false'], { env });
    await eventually(async () => (await outcome(gw, 'cli-key')) === 4003, { what: 'disabled from the command line' });
    await run(process.execPath, [GATEWAY, 'apps', 'remove', '--id', 'cli'], { env });
    await eventually(async () => (await outcome(gw, 'cli-key')) === 4001, { what: 'removed from the command line' });
    const refused = await run(process.execPath, [GATEWAY, 'apps', 'add', '--max-connections', '-5'], { env }).catch((err) => err);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('--max-connections must be at least 0, got -5');
  });
});

describe('Pusher apps database at start', function () {
  this.timeout(30000);

  it('refuses to start when the database cannot be reached, naming it without its password', async () => {
    const url = 'postgres://gateway:hunter2-secret@127.0.0.1:1/apps';
    const err = await run(process.execPath, [GATEWAY, '--apps-database', url, '--port', '0', '--metrics-port', '0', '--workers', '1'], { timeout: 20000 }).catch((e) => e);
    expect(err.code).to.equal(1);
    const fatal = err.stdout.split('\n').filter(Boolean).map((line) => JSON.parse(line)).find((l) => l.msg === 'cannot start');
    expect(fatal.err).to.include('--apps-database postgres://gateway:***@127.0.0.1:1/apps');
    expect(err.stdout + err.stderr).not.to.include('hunter2');
  });
});
