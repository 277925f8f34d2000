// The README's Laravel section, copied as a new user copies it: its `.env`
// (with `${VAR}` expanded as Laravel's dotenv and Vite expand it), its
// config/broadcasting.php options as Laravel's Pusher broadcaster hands them
// to Pusher's server library, and its Echo snippet run with Vite's
// import.meta.env, against a real gateway whose app's secret comes from the
// environment. An event broadcast reaches the Echo listener.
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import Echo from 'laravel-echo';
import PusherJs from 'pusher-js';
import Pusher from 'pusher';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';

const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8');
const section = readme.slice(readme.indexOf('### Laravel\n'), readme.indexOf('\n### ', readme.indexOf('### Laravel\n') + 5));
const blocks = [...section.matchAll(/```(\w*)\n([^]*?)```/g)].map(([, lang, body]) => ({ lang, body }));

/** The `.env` block as Laravel reads it, the host and port put where this test's gateway listens. */
function dotenv(text, port) {
  const env = {};
  for (const line of text.split('\n')) {
    const match = /^([A-Z_]+)=(.*)$/.exec(line.trim());
    if (match === null) continue;
    const value = match[2].replace(/^"(.*)"$/, '$1').replace(/\$\{([A-Z_]+)\}/g, (_, name) => env[name] ?? '');
    env[match[1]] = value;
  }
  return { ...env, PUSHER_HOST: '127.0.0.1', PUSHER_PORT: String(port), VITE_PUSHER_HOST: '127.0.0.1', VITE_PUSHER_PORT: String(port) };
}

describe('README: the Laravel section', function () {
  this.timeout(30000);
  let gw, echo;
  after(async () => {
    echo?.disconnect();
    await gw?.stop();
  });

  it('works as copied: .env, broadcasting.php\'s options and Echo against the gateway', async () => {
    const [envBlock, phpBlock, echoBlock] = blocks;
    expect(phpBlock.lang).to.equal('php');
    expect(echoBlock.lang).to.equal('js');
    const first = dotenv(envBlock.body, 0);
    // The gateway's app: its secret from the environment, as the README's "An app" starts it.
    gw = await startGateway(['--pusher-app-id', first.PUSHER_APP_ID, '--pusher-key', first.PUSHER_APP_KEY], { env: { GATEWAY_PUSHER_SECRET: first.PUSHER_APP_SECRET } });
    const env = dotenv(envBlock.body, gw.port);
    expect(env.VITE_PUSHER_APP_KEY).to.equal(env.PUSHER_APP_KEY);
    // broadcasting.php, as Laravel's PusherBroadcaster builds Pusher's client from it.
    for (const key of ["env('PUSHER_HOST')", "env('PUSHER_PORT', 443)", "env('PUSHER_SCHEME', 'https')", "env('PUSHER_APP_SECRET')"]) expect(phpBlock.body).to.include(key);
    const server = new Pusher({
      appId: env.PUSHER_APP_ID,
      key: env.PUSHER_APP_KEY,
      secret: env.PUSHER_APP_SECRET,
      host: env.PUSHER_HOST,
      port: env.PUSHER_PORT,
      useTLS: env.PUSHER_SCHEME === 'https'
    });
    // The Echo snippet, its imports given, import.meta.env as Vite fills it from the VITE_ lines.
    const code = echoBlock.body.replace(/^import .*$/gm, '').replaceAll('import.meta.env', 'viteEnv');
    // A browser's window, which Echo reads `Pusher` from (the snippet sets it there).
    globalThis.window = {};
    try {
      const vite = Object.fromEntries(Object.entries(env).filter(([name]) => name.startsWith('VITE_')));
      new Function('Echo', 'Pusher', 'viteEnv', code)(Echo, PusherJs, vite);
      echo = globalThis.window.Echo;
    } finally {
      delete globalThis.window;
    }
    expect(echo.options.key).to.equal(env.PUSHER_APP_KEY);
    const got = [];
    echo.channel('orders').listen('.shipped', (data) => got.push(data));
    await eventually(() => echo.connector.pusher.connection.state === 'connected', { what: 'Echo connected' });
    await eventually(async () => {
      await server.trigger('orders', 'shipped', { id: 1 });
      return got.length > 0;
    }, { what: 'the broadcast at the Echo listener' });
    expect(got[0]).to.deep.equal({ id: 1 });
  });
});
