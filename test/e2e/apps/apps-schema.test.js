// The apps table beside other sessions of a real PostgreSQL: its schema made
// once (two gateways starting together; `gateway apps migrate`), never on a
// connection or by the other `gateway apps` commands, so a session holding a
// read transaction on the table (a pg_dump, a report, a forgotten BEGIN)
// delays neither a gateway's start, its reconnect, `apps list`, nor another
// session's write; the table's own constraints refuse what the gateway would.
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { startGateway } from '../../../scripts/harness/gateway.js';
import { PostgresServer } from '../../../scripts/harness/postgres.js';
import { eventually, outcome, startPusherGateway } from '../../helpers/pusher.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const run = promisify(execFile);
const SECRET = 'a-database-secret-0123456789';
// What another session's statement may wait: far above any normal write, far below the reader's hold.
const OTHERS_TIMEOUT_MS = 5000;

/** `gateway apps …` on the database; resolves with its exit code and output whatever the code. */
function apps(pg, args) {
  return run(process.execPath, [GATEWAY, 'apps', ...args, '--apps-database', pg.url], { timeout: 20000 }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr })
  );
}


/** A write by another session, which gives up (and fails the test) past OTHERS_TIMEOUT_MS. */
function otherSessionWrites(pg, statement) {
  return pg.query(`SET statement_timeout = ${OTHERS_TIMEOUT_MS}; ${statement}`);
}

const constraints = async (pg) =>
  (await pg.query("SELECT conname FROM pg_constraint WHERE conrelid = 'gateway_apps'::regclass AND contype = 'c' ORDER BY conname")).rows.map((r) => r.conname);

describe('The apps table beside other database sessions', function () {
  this.timeout(60000);
  let pg;
  const gateways = [];
  const readers = [];

  beforeEach(async () => {
    pg = await PostgresServer.start();
  });
  afterEach(async () => {
    await Promise.all(readers.splice(0).map((reader) => reader.release()));
    await Promise.all(gateways.splice(0).map((gw) => gw.stop()));
    await pg.remove();
  });

  it('is made once, whole, when two gateways start together on an empty database', async () => {
    gateways.push(...(await Promise.all([0, 1].map(() => startGateway(['--workers', '1'], { env: { GATEWAY_APPS_DATABASE: pg.url } })))));
    const made = gateways.flatMap((gw) => gw.logs.filter((l) => l.msg?.startsWith('apps table brought to schema')));
    expect(made.map((l) => l.msg)).to.deep.equal(['apps table brought to schema 3 (was 0)']);
    const triggers = await pg.query("SELECT tgname FROM pg_trigger WHERE tgrelid = 'gateway_apps'::regclass AND NOT tgisinternal ORDER BY tgname");
    expect(triggers.rows.map((r) => r.tgname)).to.deep.equal(['gateway_apps_changed', 'gateway_apps_truncated']);
    expect(await constraints(pg)).to.have.length(14);
  });

  it('refuses, in the table itself, a row the gateway would refuse', async () => {
    expect((await apps(pg, ['migrate'])).stdout).to.equal('gateway_apps: schema 3 (was no table)\n');
    const insert = (fields) => {
      const row = { id: 'app', key: 'key', secret: SECRET, ...fields };
      const columns = Object.keys(row);
      return pg.query(`INSERT INTO gateway_apps (${columns.join(', ')}) VALUES (${columns.map((_, i) => `$${i + 1}`).join(', ')})`, Object.values(row));
    };
    const refused = [
      { id: 'a'.repeat(8001) }, // past NOTIFY's payload: the write would fail in the trigger otherwise
      { id: 'a'.repeat(65) },
      { id: 'has:colon' },
      { key: 'has/slash' },
      { secret: 'too-short' },
      { max_connections: -1 },
      { max_event_batch_size: 0 },
      { max_presence_members: 2e9 },
      { webhooks: '{}' },
      { webhooks: '["http://x"]' },
      { webhooks: JSON.stringify(Array.from({ length: 101 }, (_, i) => ({ url: `http://127.0.0.1/${i}` }))) },
      { ably_capability: '[]' },
      { ably_keys: '{}' },
      { ably_keys: JSON.stringify(Array.from({ length: 21 }, (_, i) => ({ keyId: `k${i}` }))) }
    ];
    for (const fields of refused) {
      const err = await insert(fields).then(() => undefined, (e) => e);
      expect(err?.code, JSON.stringify(fields).slice(0, 80)).to.equal('23514'); // check_violation
    }
    await insert({ webhooks: JSON.stringify(Array.from({ length: 100 }, (_, i) => ({ url: `http://127.0.0.1/${i}` }))) });
    expect((await pg.query('SELECT count(*)::int AS n FROM gateway_apps')).rows[0].n).to.equal(1);
  });

  it('starts, serves, answers `apps list` and reconnects while a reader holds the table, blocking no other session', async () => {
    await apps(pg, ['migrate']);
    await pg.query("INSERT INTO gateway_apps (id, key, secret) VALUES ('held', 'held-key', $1)", [SECRET]);
    readers.push(await pg.holdRead('gateway_apps'));
    // Each step below completes while the reader still holds its transaction: one that waited for it would never finish.
    const gw = await startPusherGateway(['--apps-database', pg.url]);
    gateways.push(gw);
    expect(await outcome(gw, 'held-key')).to.equal('established');
    const listed = await apps(pg, ['list']);
    expect(listed.code).to.equal(0);
    expect(listed.stdout).to.match(/^held\theld-key\t/);
    await pg.query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'gateway'");
    await gw.waitForLog((l) => l.msg === 'apps database back: apps read again', 20000);
    await otherSessionWrites(pg, "UPDATE gateway_apps SET enabled = false WHERE id = 'held'");
    await eventually(async () => (await outcome(gw, 'held-key')) === 4003, { what: 'the other session\'s write, followed' });
  });

  it('serves an older table as it is while a reader holds it, says why, and `apps migrate` brings it up to date once free', async () => {
    await apps(pg, ['migrate']);
    // A table as a gateway before constraints left it: no version, no constraints.
    await pg.query(`ALTER TABLE gateway_apps ${(await constraints(pg)).map((name) => `DROP CONSTRAINT ${name}`).join(', ')}`);
    await pg.query('COMMENT ON TABLE gateway_apps IS NULL');
    await pg.query("INSERT INTO gateway_apps (id, key, secret) VALUES ('old', 'old-key', $1)", [SECRET]);
    const reader = await pg.holdRead('gateway_apps');
    readers.push(reader);
    const gw = await startPusherGateway(['--apps-database', pg.url, '--apps-database-lock-timeout', '300']);
    gateways.push(gw);
    const behind = gw.logs.find((l) => l.msg?.startsWith('apps table left at schema 1'));
    expect(behind.msg).to.include('waited over its lock_timeout for a lock on gateway_apps');
    expect(await outcome(gw, 'old-key')).to.equal('established');
    await otherSessionWrites(pg, "UPDATE gateway_apps SET enabled = false WHERE id = 'old'");
    const held = await apps(pg, ['migrate', '--apps-database-lock-timeout', '300']);
    expect(held.code).to.equal(1);
    expect(held.stderr).to.include('waited over its lock_timeout for a lock on gateway_apps');
    await reader.release();
    readers.splice(0);
    expect((await apps(pg, ['migrate'])).stdout).to.equal('gateway_apps: schema 3 (was 1)\n');
    expect(await constraints(pg)).to.have.length(14);
  });

  it('adds the columns of a later schema to a table an older gateway made, each with its default', async () => {
    await apps(pg, ['migrate']);
    // A table as a gateway of schema 2 left it: without the apps' Ably columns.
    await pg.query('ALTER TABLE gateway_apps DROP COLUMN ably_capability, DROP COLUMN ably_keys');
    await pg.query("COMMENT ON TABLE gateway_apps IS 'gateway_apps schema 2: made by the gateway (gateway apps migrate)'");
    await pg.query("INSERT INTO gateway_apps (id, key, secret) VALUES ('before', 'before-key', $1)", [SECRET]);
    expect((await apps(pg, ['migrate'])).stdout).to.equal('gateway_apps: schema 3 (was 2)\n');
    const { rows } = await pg.query("SELECT ably_capability, ably_keys FROM gateway_apps WHERE id = 'before'");
    expect(rows[0]).to.deep.equal({ ably_capability: null, ably_keys: [] });
    const set = await apps(pg, ['set', '--id', 'before', '--ably-capability', '{"news:*": ["subscribe"]}', '--ably-keys', `[{"keyId": "ro", "secret": "${SECRET}", "capability": {"*": ["history"]}}]`]);
    expect(set.code, set.stderr).to.equal(0);
    const listed = await apps(pg, ['list', '--json']);
    // Listed without the further key's secret, as the app's own is.
    expect(JSON.parse(listed.stdout)[0]).to.deep.include({ ablyCapability: { 'news:*': ['subscribe'] }, ablyKeys: [{ keyId: 'ro', capability: { '*': ['history'] } }] });
    const refused = await apps(pg, ['set', '--id', 'before', '--ably-capability', '{"news:*": ["read"]}']);
    expect(refused.code).to.equal(2);
    expect(refused.stderr).to.include('ablyCapability "news:*": the operations are');
  });

  it('`apps list` on a database without the table says how to make it, and makes nothing', async () => {
    const listed = await apps(pg, ['list']);
    expect(listed.code).to.equal(1);
    expect(listed.stderr).to.include('no table gateway_apps in this database: `gateway apps migrate` makes it');
    expect((await pg.query("SELECT to_regclass('gateway_apps') IS NULL AS missing")).rows[0].missing).to.equal(true);
  });
});
