// The apps table in PostgreSQL (--apps-database), read by the primary only:
// its URL is a secret the workers never see. At start the table and its
// trigger are made if missing, every app is loaded, and LISTEN gateway_apps
// follows every change after: the trigger names the app id of each row
// inserted, updated or deleted, the ids named within COALESCE_MS are read
// again in one query, so a storm of changes costs a few queries. The
// connection lost, the apps already loaded are kept; the database is asked
// again with a growing delay, and once back everything is read again (the
// changes made meanwhile were never notified).
import { EventEmitter } from 'node:events';
import { require } from '../runtime/require.js';
import { APP_FIELDS } from '../pusher/apps.js';

const { Client } = require('pg');

export const TABLE = 'gateway_apps';
const CHANNEL = 'gateway_apps';
const COALESCE_MS = 50;
const CONNECT_TIMEOUT_MS = 5000;
const RETRY_FIRST_MS = 250;
const RETRY_MAX_MS = 5000;
const ALL = '*'; // what the trigger names for a TRUNCATE: everything is read again

// The table of the contract, its columns in APP_FIELDS's order.
const SCHEMA = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
  id text PRIMARY KEY,
  key text UNIQUE NOT NULL,
  secret text NOT NULL,
  enabled boolean NOT NULL DEFAULT true,
  client_events boolean NOT NULL DEFAULT false,
  subscription_count boolean NOT NULL DEFAULT false,
  max_connections integer,
  max_client_events_per_second integer DEFAULT 10,
  max_backend_events_per_second integer,
  max_event_payload_kb integer DEFAULT 10,
  max_event_batch_size integer DEFAULT 10,
  max_event_channels integer DEFAULT 100,
  max_presence_members integer DEFAULT 100,
  max_presence_member_info_kb integer DEFAULT 2,
  webhooks jsonb NOT NULL DEFAULT '[]'
);
CREATE OR REPLACE FUNCTION ${TABLE}_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP = 'TRUNCATE' THEN
    PERFORM pg_notify('${CHANNEL}', '${ALL}');
    RETURN NULL;
  END IF;
  IF TG_OP <> 'INSERT' THEN PERFORM pg_notify('${CHANNEL}', OLD.id); END IF;
  IF TG_OP <> 'DELETE' AND (TG_OP = 'INSERT' OR NEW.id IS DISTINCT FROM OLD.id) THEN PERFORM pg_notify('${CHANNEL}', NEW.id); END IF;
  RETURN NULL;
END $$;
DROP TRIGGER IF EXISTS ${TABLE}_changed ON ${TABLE};
CREATE TRIGGER ${TABLE}_changed AFTER INSERT OR UPDATE OR DELETE ON ${TABLE} FOR EACH ROW EXECUTE FUNCTION ${TABLE}_notify();
DROP TRIGGER IF EXISTS ${TABLE}_truncated ON ${TABLE};
CREATE TRIGGER ${TABLE}_truncated AFTER TRUNCATE ON ${TABLE} FOR EACH STATEMENT EXECUTE FUNCTION ${TABLE}_notify();
`;

/**
 * Connects, makes the table and trigger if missing (one gateway at a time:
 * an advisory lock), and returns the client.
 * @param {string} url
 * @returns {Promise<import('pg').Client>}
 * @throws {Error} naming the database (its URL without the password)
 */
export async function openAppsDatabase(url) {
  const client = new Client({ connectionString: url, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
  client.on('error', () => {}); // a lost connection is seen by its 'end' (AppsDatabase) or the failing query
  try {
    await client.connect();
    await client.query('BEGIN');
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('${TABLE}'))`);
    await client.query(SCHEMA);
    await client.query('COMMIT');
  } catch (err) {
    await client.end().catch(() => {});
    throw new Error(`--apps-database ${shown(url)}: ${err.message || err.code}`);
  }
  return client;
}

/**
 * The apps of the table, followed. Emits 'apps' (rows by id: the whole table
 * at each (re)connection), 'rows' (rows by id, null for one deleted: the ids
 * a batch of notifications named), 'down' (Error) and 'up'.
 */
export class AppsDatabase extends EventEmitter {
  /** @param {{url: string}} options */
  constructor({ url }) {
    super();
    this.url = url;
    this.client = undefined;
    this.pending = new Set(); // ids notified, not read yet
    this.timer = undefined;
    this.retryMs = RETRY_FIRST_MS;
    this.retry = undefined;
    this.stopped = false;
  }

  /** Connects and reads every app; rejects (naming the database) if it cannot. */
  async start() {
    await this.connect();
  }

  async connect() {
    const client = await openAppsDatabase(this.url);
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
      throw new Error(`--apps-database ${shown(this.url)}: ${err.message}`);
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
      this.lost(client, err); // the ids are read again, with everything, once back
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
    await this.client?.end().catch(() => {});
  }
}

/** A database URL as it may be shown: without its password. */
export function shown(url) {
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
