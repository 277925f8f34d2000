// The apps table's schema: the table, the trigger that notifies each change,
// and the constraints that hold what the gateway requires of a row. It is
// made or brought up to date once (a gateway's first start on the database,
// or `gateway apps migrate`), under an advisory lock so that two gateways
// starting together do not race, and only when the table's version, kept as
// its comment, is older than this one. Reading the version takes no lock on
// the table; the DDL takes an exclusive one, which another session's open
// transaction on the table holds off. It therefore waits at most the
// session's lock_timeout, and a gateway that could not change it serves the
// table as it is meanwhile and tries again later. A table made by an older
// gateway gets the columns added since, each with its default.
//
// The constraints are made from the rules of lib/pusher/apps.js (APP_FIELDS:
// a pattern, a minimum length, a number's range, a list's length), so a row
// the gateway would refuse cannot be written. They are added NOT VALID: a row
// written before is not checked (the gateway refuses it alone, as it would
// anyway) and the change does not read the table.
import { APP_FIELDS } from '../pusher/apps.js';

export const TABLE = 'gateway_apps';
export const CHANNEL = 'gateway_apps';
export const SCHEMA_VERSION = 3; // 1: the table and its trigger; 2: its constraints; 3: the apps' Ably capability and keys
export const ALL = '*'; // what the trigger names for a TRUNCATE: everything is read again
const VERSIONED = /^gateway_apps schema (\d+)/;
const COLUMN_TYPES = {
  id: 'text PRIMARY KEY',
  key: 'text UNIQUE NOT NULL',
  secret: 'text NOT NULL',
  enabled: 'boolean NOT NULL DEFAULT true',
  client_events: 'boolean NOT NULL DEFAULT false',
  subscription_count: 'boolean NOT NULL DEFAULT false',
  webhooks: "jsonb NOT NULL DEFAULT '[]'",
  ably_capability: 'jsonb',
  ably_keys: "jsonb NOT NULL DEFAULT '[]'"
};

/** A column's type and default: text and booleans above, every limit an integer with its field's default. */
function columnType(column, field) {
  return COLUMN_TYPES[column] ?? `integer${field.default === null ? '' : ` DEFAULT ${field.default}`}`;
}

/** The CHECK a field's rule makes of its column, or undefined when its type is rule enough. */
function checkOf(column, field) {
  if (field.pattern !== undefined) return `${column} ~ '${field.pattern.source}'`;
  if (field.minLength !== undefined) return `char_length(${column}) >= ${field.minLength}`;
  if (field.number !== undefined) return `${column} IS NULL OR ${column} BETWEEN ${field.number.min} AND ${field.number.max}`;
  if (field.maxItems !== undefined) {
    // CASE, since a CHECK's AND does not promise which side runs first.
    return `CASE WHEN jsonb_typeof(${column}) = 'array' THEN jsonb_array_length(${column}) <= ${field.maxItems} AND NOT jsonb_path_exists(${column}, '$[*] ? (@.type() != "object")') ELSE false END`;
  }
  if (field.json !== undefined) return `${column} IS NULL OR jsonb_typeof(${column}) = 'object'`;
  return undefined;
}

const COLUMNS = Object.values(APP_FIELDS).filter((field) => field.column !== undefined);
const CHECKS = COLUMNS.map((field) => [`${TABLE}_${field.column}_valid`, checkOf(field.column, field)]).filter(([, check]) => check !== undefined);

const DDL = `
CREATE TABLE IF NOT EXISTS ${TABLE} (
${COLUMNS.map((field) => `  ${field.column} ${columnType(field.column, field)}`).join(',\n')}
);
ALTER TABLE ${TABLE}
${COLUMNS.map((field) => `  ADD COLUMN IF NOT EXISTS ${field.column} ${columnType(field.column, field)}`).join(',\n')};
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
ALTER TABLE ${TABLE}
${CHECKS.map(([name, check]) => `  DROP CONSTRAINT IF EXISTS ${name},\n  ADD CONSTRAINT ${name} CHECK (${check}) NOT VALID`).join(',\n')};
COMMENT ON TABLE ${TABLE} IS 'gateway_apps schema ${SCHEMA_VERSION}: made by the gateway (gateway apps migrate)';
`;

/**
 * @param {import('pg').Client} client
 * @returns {Promise<number>} the table's schema version: 0 when there is no table, 1 for one made before versions were kept
 */
export async function schemaVersion(client) {
  // A plain read of the catalog, so it sees what committed before it began:
  // under the advisory lock, another gateway's table and comment.
  const { rows } = await client.query(
    "SELECT obj_description(c.oid, 'pg_class') AS comment FROM pg_class c WHERE c.relname = $1 AND c.relkind = 'r' AND pg_table_is_visible(c.oid)",
    [TABLE]
  );
  if (rows.length === 0) return 0;
  return Number(VERSIONED.exec(rows[0].comment ?? '')?.[1] ?? 1);
}

/**
 * Brings the table to SCHEMA_VERSION, in one transaction under the advisory
 * lock; a version read again under the lock that is current already (another
 * gateway's work) changes nothing.
 * @param {import('pg').Client} client whose session has a lock_timeout: the DDL waits no longer for the table's lock
 * @returns {Promise<{from: number, to: number}>}
 * @throws the database's error (a lock_timeout's is code 55P03), the transaction rolled back
 */
export async function migrate(client) {
  await client.query('BEGIN');
  try {
    await client.query(`SELECT pg_advisory_xact_lock(hashtext('${TABLE}'))`);
    const from = await schemaVersion(client);
    if (from < SCHEMA_VERSION) await client.query(DDL);
    await client.query('COMMIT');
    return { from, to: Math.max(from, SCHEMA_VERSION) };
  } catch (err) {
    await client.query('ROLLBACK').catch(() => {});
    throw err;
  }
}

/** What waited, for a log line or an error: the table, and which timeout a statement ran into. */
export function waitedFor(err) {
  if (err?.code === '55P03') return `waited over its lock_timeout for a lock on ${TABLE} (another session holds it: a long transaction?)`;
  if (err?.code === '57014') return `ran over its statement_timeout on ${TABLE}`;
  return undefined;
}
