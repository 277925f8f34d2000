// The README's reference tables, held against the code they describe: the
// options tables (generated), the routes and the server API's methods, the
// metrics with their labels, the file layout and the error codes. Each is read from the code, so a route,
// metric, file or code added anywhere fails here until the README says it.
import { readFileSync, readdirSync, existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { optionsTable, TABLES } from '../../scripts/options-table.js';
import { ErrorCode, GatewayError } from '../../lib/core/errors.js';
import { metrics as workerMetrics } from '../../lib/session/metrics.js';
import { createPrimaryMetrics } from '../../lib/primary/metrics.js';
import { METHODS } from '../../lib/core/server.js';
import { require } from '../../lib/runtime/require.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const readme = readFileSync(path.join(ROOT, 'README.md'), 'utf8');

describe('README', () => {
  for (const name of Object.keys(TABLES)) {
    it(`holds the ${name} options table exactly as the code defines it`, () => {
      const found = new RegExp(`<!-- options-table ${name}[^>]*-->\\n([^]*?)\\n<!-- /options-table -->`).exec(readme);
      expect(found, `markers for ${name}`).to.not.equal(null);
      expect(found[1]).to.equal(optionsTable(name));
    });
  }

  it('holds the install-and-start and the test commands on its first screen, under what it is and its figures', () => {
    const firstScreen = readme.split('\n').slice(0, 30).join('\n');
    expect(firstScreen).to.include('npm ci && npm start');
    expect(firstScreen).to.include('npm test');
  });

  it('lists every route the workers and the metrics listener serve, and no other', () => {
    const documented = rows('routes').map(([route, listener]) => `${listener} ${routeKey(ticked(route)[0].replace(/^[A-Z]+ /, ''))}`);
    expect(sorted(documented)).to.deep.equal(sorted(servedRoutes()));
  });

  it('lists every server API method, and no other', () => {
    const documented = rows('api-methods').map(([method]) => ticked(method)[0]);
    expect(sorted(documented)).to.deep.equal(sorted(Object.keys(METHODS)));
  });

  it('lists every metric with its labels and where it comes from, and no other', () => {
    const documented = rows('metrics').flatMap(([names, from]) => (ticked(names).length > 0 ? ticked(names) : [names]).map((name) => `${name} ${from}`));
    expect(sorted(documented)).to.deep.equal(sorted(registeredMetrics()));
  });

  it('lists every file under lib/, and each file it lists exists', () => {
    const listed = rows('files').flatMap(([where, job]) => {
      const [first, ...more] = ticked(where);
      if (!first.endsWith('/')) return [first, ...more];
      return ticked(job)
        .filter((name) => /^[\w./-]+\.(js|ts|lua|html|css|json)$/.test(name))
        .map((name) => path.posix.join(first, name));
    });
    for (const file of listed) expect(existsSync(path.join(ROOT, file)), `${file} (listed) exists`).to.equal(true);
    const missing = filesUnder('lib').filter((file) => !listed.includes(file));
    expect(missing, 'files under lib/ the table does not name').to.deep.equal([]);
  });

  it('lists every error code with its HTTP status, and no other', () => {
    const documented = rows('error-codes').map(([code, status]) => [ticked(code)[0], Number(status)]);
    expect(sorted(documented.map(([code]) => code))).to.deep.equal(sorted(Object.values(ErrorCode)));
    for (const [code, status] of documented) expect(status, code).to.equal(new GatewayError(code, '').status);
  });
});

/** The cells of each row of the table between `<!-- name -->` and `<!-- /name -->` (its header left out). */
function rows(name) {
  const found = new RegExp(`<!-- ${name}[^>]*-->\\n([^]*?)\\n<!-- /${name} -->`).exec(readme);
  expect(found, `<!-- ${name} --> markers`).to.not.equal(null);
  return found[1]
    .split('\n')
    .slice(2)
    .map((line) => line.split(/(?<!\\)\|/).slice(1, -1).map((cell) => cell.trim()));
}

/** What a cell writes between backticks. */
function ticked(cell) {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]);
}

const sorted = (list) => [...list].sort();

/**
 * A route as the README writes it and as the code matches it, reduced to the
 * part they share: `{--path}` and `config.path` are the upgrade path; a
 * `<placeholder>` and a regular expression's first group both end the fixed
 * prefix (`/api/<method>` and `startsWith('/api/')` are `/api/…`).
 */
function routeKey(route) {
  if (route === '{--path}') return route;
  const cut = route.search(/[<(\[]/);
  return cut === -1 ? route : `${route.slice(0, cut)}…`;
}

// Code under lib/ that serves no listener: the tools and the browser
// client, whose path literals are not routes.
const NO_ROUTES = ['lib/client/', 'lib/loadgen/', 'lib/doctor/', 'lib/config/'];

/**
 * Every path the request handlers compare the request's with: `=== '/x'`,
 * `case '/x':`, `startsWith('/x')` (a prefix), a `'/x':` key of a table of routes, a
 * regular expression anchored at `^\/`, and the configured `config.path`.
 * What the primary's files serve is on the metrics listener (the primary's
 * public listener only hands connections over); everything else under lib/
 * serves the public port, from the workers.
 */
function servedRoutes() {
  const found = new Set();
  for (const file of filesUnder('lib')) {
    if (!file.endsWith('.js') || NO_ROUTES.some((prefix) => file.startsWith(prefix))) continue;
    const listener = file.startsWith('lib/primary/') || file.startsWith('lib/admin/') ? 'metrics' : 'public';
    const code = readFileSync(path.join(ROOT, file), 'utf8');
    for (const [, route] of code.matchAll(/(?:[!=]== |case |^\s*)'(\/[^']*)'(?=[\s,)]|:)/gm)) found.add(`${listener} ${route}`);
    for (const [, prefix] of code.matchAll(/startsWith\('(\/[^']*)'\)/g)) found.add(`${listener} ${prefix}…`);
    for (const [, source] of code.matchAll(/\/\^(\\\/(?:\\\/|[^/\n])*?)\$\//g)) found.add(`${listener} ${routeKey(source.replaceAll('\\/', '/'))}`);
    if (/[!=]== config\.path\b/.test(code)) found.add(`${listener} {--path}`);
  }
  return [...found];
}

/** Every gateway_* metric of the workers' and the primary's registries, as `name{labels} from`. */
function registeredMetrics() {
  const client = require('prom-client');
  const primary = createPrimaryMetrics({ liveWorkers: () => 0, engine: { figures: () => ({}), available: true } }).registry;
  const shown = (metric) => (metric.labelNames.length === 0 ? metric.name : `${metric.name}{${metric.labelNames.join(',')}}`);
  const workers = Object.values(workerMetrics).map((m) => `${shown(m)} workers`);
  expect(client.register.getMetricsAsArray().filter((m) => m.name.startsWith('gateway_')).length, 'every worker metric is in lib/session/metrics.js').to.equal(
    workers.length
  );
  // prom-client's defaults, which the primary prefixes gateway_primary_, are one row of their own.
  const own = primary.getMetricsAsArray().filter((m) => !m.name.startsWith('gateway_primary_'));
  return [...workers, ...own.map((m) => `${shown(m)} primary`), 'prom-client defaults both'];
}

/** Every file under `dir` (relative to the repository), as a repository path. */
function filesUnder(dir) {
  return readdirSync(path.join(ROOT, dir)).flatMap((name) => {
    const file = path.posix.join(dir, name);
    return statSync(path.join(ROOT, file)).isDirectory() ? filesUnder(file) : [file];
  });
}
