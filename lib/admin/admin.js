// The admin page's one module: polls GET /admin/api/view while the page is
// visible and sends the actions. Everything the server says is written as
// text (textContent), never as markup: a presence member's info or a
// message's data holding HTML shows as the characters it is.
const REFRESH_MS = 1000;
const $ = (selector) => document.querySelector(selector);

let timer;
let asked = 0; // the latest refresh: an older one's answer is dropped, and only the latest schedules the next
let watching = { app: '', protocol: '', prefix: '', channel: '', limit: '20' };

/** A table row of cells, each given as text. */
function row(cells) {
  const tr = document.createElement('tr');
  for (const cell of cells) {
    const td = document.createElement('td');
    if (cell instanceof Node) td.append(cell);
    else td.textContent = String(cell ?? '–');
    tr.append(td);
  }
  return tr;
}

function fill(tbody, rows) {
  tbody.replaceChildren(...rows.map(row));
}

/** Shows a part's {error: {code, message}} (or null: the call failed) in its place, or hides it. */
function problem(element, answer) {
  const error = answer === null ? { code: 'failed', message: 'the worker failed this call without an error code' } : answer?.error;
  element.hidden = error === undefined;
  element.textContent = error === undefined ? '' : `${error.code}: ${error.message}`;
  return error !== undefined;
}

const mb = (bytes) => (bytes == null ? '–' : `${Math.round(bytes / 1048576)} MB`);
const ms = (value) => value.toFixed(1);

function duration(s) {
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.floor(s / 60)} min`;
  return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

function showNodes({ info, stats }) {
  const nodes = problem($('#nodes .error'), info) ? [] : info.result.nodes;
  fill($('#nodes tbody'), nodes.map((n) => [n.name, n.workers, n.connections.ws, n.connections.sse, n.subscriptions, duration(n.uptimeS)]));
  const workers = stats?.workers ?? [];
  const rows = workers.map((w) => [
    w.worker, w.pid, w.connections - w.streams, w.streams, w.subscriptions, mb(w.rssBytes), mb(w.heapUsedBytes),
    `${ms(w.eventLoopDelayMs.p99)} / ${ms(w.eventLoopDelayMs.max)}`
  ]);
  if (stats) rows.push(['primary', stats.primary.pid, '', '', '', mb(stats.primary.rssBytes), mb(stats.primary.heapUsedBytes), '']);
  fill($('#workers tbody'), rows);
}

const PROTOCOL_LABELS = { pusher: 'Pusher', ably: 'Ably' };
const labelOf = (protocol) => PROTOCOL_LABELS[protocol] ?? protocol;

/**
 * The apps, each protocol's channels and subscriptions beside its
 * connections, and the picker that shows one app's channels of one protocol
 * (`<protocol>:<app>`) instead of the native ones.
 */
function showApps({ apps }) {
  $('#apps').hidden = apps === undefined;
  const picker = $('#filter [name=app]');
  picker.hidden = apps === undefined;
  if (apps === undefined || problem($('#apps .error'), apps)) return;
  const list = apps.result.apps;
  const protocols = Object.keys(list[0]?.protocols ?? {});
  const head = ['app', 'key', 'connections', ...protocols.map(labelOf)];
  // A protocol's column: its channels and their subscriptions, `2 / 5`.
  const headers = head.map((text, i) => Object.assign(document.createElement('th'), { textContent: text, title: i < 3 ? '' : `${text} channels / subscriptions` }));
  if ($('#apps thead').textContent !== head.join('')) $('#apps thead tr').replaceChildren(...headers);
  fill($('#apps tbody'), list.map((app) => [
    pickButton(app.appId, `${protocols[0]}:${app.appId}`), app.key, app.connections,
    ...protocols.map((protocol) => figures(app, protocol))
  ]));
  const values = list.flatMap((app) => protocols.map((protocol) => [`${protocol}:${app.appId}`, `${labelOf(protocol)} app ${app.appId}`]));
  const shown = [...picker.options].slice(1).map((option) => option.value);
  if (values.map(([value]) => value).join('\n') === shown.join('\n')) return;
  picker.replaceChildren(picker.options[0], ...values.map(([value, label]) => option(value, label)));
  picker.value = watching.app === '' ? '' : `${watching.protocol}:${watching.app}`;
}

/** A protocol's channels of an app (a button that lists them) and their subscriptions: `2 / 5`. */
function figures(app, protocol) {
  const cell = document.createElement('span');
  const { channels, subscribers } = app.protocols[protocol];
  cell.append(pickButton(channels, `${protocol}:${app.appId}`), ` / ${subscribers}`);
  return cell;
}

function option(value, label) {
  const element = document.createElement('option');
  element.value = value;
  element.textContent = label;
  return element;
}

/** A figure of an app that, clicked, lists that app's channels of a protocol (`<protocol>:<app>`). */
function pickButton(text, value) {
  return watchButton(text, '#filter [name=app]', value);
}

function showChannels({ channels }) {
  const failed = problem($('#channels .error'), channels);
  const { top = [], total = 0 } = failed ? {} : channels.result;
  $('#channel-count').textContent = failed ? '' : `(${top.length} of ${total})`;
  fill($('#channels tbody'), top.map(({ name, subscribers }) => [channelButton(name), subscribers]));
}

/** A channel name that, clicked, watches the channel. */
function channelButton(name) {
  return watchButton(name, '#watch [name=channel]');
}

/** A name that, clicked, is put (or `value`) in the field `selector` names, and the page shows it. */
function watchButton(name, selector, value = name) {
  const button = document.createElement('button');
  button.type = 'button';
  button.className = 'link';
  button.textContent = String(name);
  button.addEventListener('click', () => {
    $(selector).value = value;
    watch();
  });
  return button;
}

function showChannel({ presence, history }) {
  const none = watching.channel === '';
  const members = none || problem($('#presence-error'), presence) ? [] : Object.entries(presence.result.clients);
  if (none) problem($('#presence-error'), undefined);
  fill($('#presence tbody'), members.map(([client, { user, info }]) => [client, user, info == null ? '' : JSON.stringify(info)]));
  const messages = none || problem($('#history-error'), history) ? [] : history.result.messages;
  if (none) problem($('#history-error'), undefined);
  fill($('#history tbody'), messages.map(({ seq, data }) => [seq, JSON.stringify(data)]));
}

async function refresh() {
  clearTimeout(timer);
  const mine = ++asked;
  const query = new URLSearchParams(watching);
  try {
    const res = await fetch(`/admin/api/view?${query}`, { cache: 'no-store' });
    if (res.status === 401) return location.reload(); // the session ended: back to the login form
    const view = await res.json();
    if (mine !== asked) return;
    if (!res.ok) throw new Error(view.error?.message ?? `HTTP ${res.status}`);
    showNodes(view);
    showApps(view);
    showChannels(view);
    showChannel(view);
    $('#freshness').textContent = `updated ${new Date().toLocaleTimeString()}`;
    $('#freshness').className = 'muted';
  } catch (err) {
    if (mine !== asked) return;
    $('#freshness').textContent = `not updating: ${err.message}`;
    $('#freshness').className = 'error';
  }
  if (mine === asked && !document.hidden) timer = setTimeout(refresh, REFRESH_MS);
}

function watch() {
  const picked = $('#filter [name=app]').value;
  const colon = picked.indexOf(':');
  watching = {
    app: picked.slice(colon + 1),
    protocol: picked.slice(0, Math.max(colon, 0)),
    prefix: $('#filter [name=prefix]').value,
    channel: $('#watch [name=channel]').value,
    limit: $('#watch [name=limit]').value
  };
  // An app's messages have names (Pusher's events, Ably's messages).
  $('#publish [name=event]').hidden = watching.app === '';
  refresh();
}

/**
 * The action's body as JSON text; a field named data is sent as written, for
 * the gateway to judge. A publish while an app is picked goes to that app's
 * channel of the protocol picked, with its event name.
 */
function body(form) {
  // A hidden field (the event name, for the native channels) is not the action's.
  const fields = [...new FormData(form)].filter(([name, value]) => !form.elements[name].hidden && (name === 'data' || value !== ''));
  if (form.id === 'publish' && watching.app !== '') fields.unshift(['app', watching.app], ['protocol', watching.protocol]);
  return `{${fields.map(([name, value]) => `${JSON.stringify(name)}:${name === 'data' ? value : JSON.stringify(value)}`).join(',')}}`;
}

async function act(event) {
  event.preventDefault();
  const form = event.target;
  const output = form.querySelector('output');
  output.className = '';
  output.textContent = '…';
  try {
    const res = await fetch(`/admin/api/${form.dataset.action}`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: body(form) });
    if (res.status === 401) return location.reload();
    const answer = await res.json();
    output.className = answer.error === undefined ? 'ok' : 'error';
    output.textContent = answer.error === undefined ? `done: ${JSON.stringify(answer.result)}` : `${answer.error.code}: ${answer.error.message}`;
  } catch (err) {
    output.className = 'error';
    output.textContent = `not sent: ${err.message}`;
  }
  refresh();
}

for (const form of document.querySelectorAll('form[data-action]')) form.addEventListener('submit', act);
$('#filter').addEventListener('input', watch);
$('#filter').addEventListener('change', watch);
$('#filter').addEventListener('submit', (event) => event.preventDefault());
$('#watch').addEventListener('submit', (event) => {
  event.preventDefault();
  watch();
});
// A hidden page asks nothing: the gateway pays only while someone looks.
document.addEventListener('visibilitychange', () => {
  if (document.hidden) clearTimeout(timer);
  else refresh();
});
refresh();
