// The apps table in PostgreSQL (--apps-database), read by the primary only:
// its URL is a secret the workers never see. At start the table is made or
// brought up to date if it is missing or older (./apps-schema.js: once, on
// a connection of its own), every app is loaded, and LISTEN gateway_apps
// follows every change after: the trigger names the app id of each row
// inserted, updated or deleted, the ids named within COALESCE_MS are read
// again in one query, so a storm of changes costs a few queries. The
// connection lost, the apps already loaded are kept; the database is asked
// again with a growing delay, and once back everything is read again (the
// changes made meanwhile were never notified).
import { EventEmitter } from 'node:events';
import { require } from '../runtime/require.js';
import { APP_FIELDS } from '../pusher/apps.js';
import { ALL, CHANNEL, migrate, schemaVersion, SCHEMA_VERSION, TABLE, waitedFor } from './apps-schema.js';

const { Client } = require('pg');

const COALESCE_MS = 50;
const CONNECT_TIMEOUT_MS = 5000;
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
const UPGRADE_AGAIN_MS = 30000; // a schema change that could not be made is tried again this much later

/**
 * Connects, with every statement of the session bounded: a lock waited for
 * past `lockTimeoutMs`, or a statement past `statementTimeoutMs`, is
 * cancelled by the database. No DDL: ./apps-schema.js makes the table.
 * @param {string} url
 * @param {{lockTimeoutMs: number, statementTimeoutMs: number, name: string}} session
 *   name: the session's application_name, as pg_stat_activity shows it
 * @returns {Promise<import('pg').Client>}
 * @throws {Error} naming the database (its URL without the password)
 */
export async function openAppsDatabase(url, { lockTimeoutMs, statementTimeoutMs, name }) {
  const client = new Client({
    connectionString: url,
    connectionTimeoutMillis: CONNECT_TIMEOUT_MS,
    lock_timeout: lockTimeoutMs,
    statement_timeout: statementTimeoutMs,
    application_name: name
  });
  client.on('error', () => {}); // a lost connection is seen by its 'end' (AppsDatabase) or the failing query
  try {
    await client.connect();
  } catch (err) {
    await client.end().catch(() => {});
    throw new Error(`--apps-database ${withoutPassword(url)}: ${err.message || err.code}`);
  }
  return client;
}

/**
 * The apps of the table, followed. Emits 'apps' (rows by id: the whole table
 * at each (re)connection), 'rows' (rows by id, null for one deleted: the ids
 * a batch of notifications named), 'down' (Error), 'up', 'migrated' ({from,
 * to}: the schema brought up to date) and 'behind' ({version, err, againMs}:
 * it could not be; the table is served as it is, the change tried again).
 */
export class AppsDatabase extends EventEmitter {
  /**
   * @param {object} options
   * @param {string} options.url
   * @param {number} options.lockTimeoutMs --apps-database-lock-timeout
   * @param {number} options.statementTimeoutMs --apps-database-statement-timeout
   */
  constructor({ url, lockTimeoutMs, statementTimeoutMs }) {
    super();
    this.url = url;
    this.session = { lockTimeoutMs, statementTimeoutMs, name: 'gateway' };
    this.upgradeAgain = undefined;
    this.client = undefined;
    this.pending = new Set(); // ids notified, not read yet
    this.timer = undefined;
    this.retryMs = RETRY_FIRST_MS;
    this.retry = undefined;
    this.stopped = false;
  }

  /** Connects and reads every app; rejects (naming the database) if it cannot. */
  async start() {
    await this.upgrade();
    await this.connect();
  }

  /**
   * The schema brought up to date when it is missing or older, on a
   * connection of its own. A table there already is served as it is when the
   * change cannot be made now; a missing one that cannot be made rejects.
   */
  async upgrade() {
    const client = await openAppsDatabase(this.url, this.session);
    let version;
    try {
      version = await schemaVersion(client);
      if (version >= SCHEMA_VERSION) return;
      const done = await migrate(client);
      if (done.from < done.to) this.emit('migrated', done);
    } catch (err) {
      if (version === undefined || version === 0) throw new Error(`--apps-database ${withoutPassword(this.url)}: making ${TABLE}: ${waitedFor(err) ?? err.message}`);
      this.emit('behind', { version, err, againMs: UPGRADE_AGAIN_MS });
      if (!this.stopped) this.upgradeAgain = setTimeout(() => this.upgrade().catch(() => {}), UPGRADE_AGAIN_MS);
    } finally {
      await client.end().catch(() => {});
    }
  }

  async connect() {
    const client = await openAppsDatabase(this.url, this.session);
    if (this.stopped) return void client.end().catch(() => {});
    client.on('notification', ({ payload }) => this.notified(payload));
    client.once('end', () => this.lost(client, new Error('connection closed')));
    client.on('error', (err) => this.lost(client, err));
    try {
      await client.query(`LISTEN ${CHANNEL}`);
      this.client = client;
      this.pending.clear();
      const all = await this.read();
      this.retryMs = RETRY_FIRST_MS;
      this.emit('apps', all);
    } catch (err) {
      this.client = undefined;
      await client.end().catch(() => {});
      throw new Error(`--apps-database ${withoutPassword(this.url)}: reading ${TABLE}: ${waitedFor(err) ?? err.message}`);
    }
  }

  notified(id) {
    this.pending.add(id);
    this.timer ??= setTimeout(() => this.flush(), COALESCE_MS);
  }

  async flush() {
    this.timer = undefined;
    const ids = [...this.pending];
    this.pending.clear();
    const client = this.client;
    if (client === undefined || ids.length === 0) return;
    try {
      if (ids.includes(ALL)) return void this.emit('apps', await this.read());
      const found = await this.read(ids);
      for (const id of ids) if (!found.has(id)) found.set(id, null);
      this.emit('rows', found);
    } catch (err) {
      this.lost(client, new Error(`reading ${TABLE}: ${waitedFor(err) ?? err.message}`)); // the ids are read again, with everything, once back
    }
  }

  /** @returns {Promise<Map<string, object>>} rows by id (all of them, or those of `ids`) */
  async read(ids) {
    const columns = Object.values(APP_FIELDS).filter((field) => field.column !== undefined).map((field) => field.column);
    const where = ids === undefined ? '' : ' WHERE id = ANY($1)';
    const { rows } = await this.client.query(`SELECT ${columns.join(', ')} FROM ${TABLE}${where} ORDER BY id`, ids === undefined ? [] : [ids]);
    return new Map(rows.map((row) => [row.id, row]));
  }

  lost(client, err) {
    if (client !== this.client || this.stopped) return;
    this.client = undefined;
    client.end().catch(() => {});
    this.emit('down', err);
    this.again();
  }

  again() {
    this.retry = setTimeout(() => {
      this.retry = undefined;
      this.connect().then(
        () => this.emit('up'),
        () => {
          this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs * 2);
          if (!this.stopped) this.again();
        }
      );
    }, this.retryMs);
  }

  async stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.retry);
    clearTimeout(this.upgradeAgain);
    await this.client?.end().catch(() => {});
  }
}

/** A database URL as it may be shown: without its password. */
export function withoutPassword(url) {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(not a URL)';
  }
}

/** A row of the table as an app of the config file's shape (camelCase keys; nulls kept, as "the default"). */
export function appOfRow(row) {
  const app = {};
  for (const [key, field] of Object.entries(APP_FIELDS)) if (field.column !== undefined && row[field.column] !== undefined) app[key] = row[field.column];
  return app;
}
