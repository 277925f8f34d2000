// The README's first screenful, followed as a new user would: its two
// commands, then "Your first message" run as written against a real gateway
// (started with the section's own flags): the browser page in Chromium, the
// curl publish that page must show, and the pusher-js script in Node. Only
// the port changes (the gateway's is ephemeral).
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { chromium } from 'playwright-core';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const FIRST_LINES = 150;

const firstScreens = readFileSync(path.join(ROOT, 'README.md'), 'utf8').split('\n').slice(0, FIRST_LINES).join('\n');

/** The code block after `<!-- first-message <name> ... -->`, within the first lines. */
function snippet(name) {
  const found = new RegExp(`<!-- first-message ${name}\\b[^>]*-->\\n\`\`\`\\w+\\n([^]*?)\\n\`\`\``).exec(firstScreens);
  expect(found, `a ${name} snippet within the first ${FIRST_LINES} lines`).to.not.equal(null);
  return found[1];
}

/** Runs a command to its end; resolves {code, stdout, stderr}. */
async function run(command, args, { timeout = 20000 } = {}) {
  const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], timeout });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  const [code] = await once(child, 'exit');
  return { code, stdout, stderr };
}

describe('README: the first hour', function () {
  this.timeout(90000);

  it(`holds the two commands and the short suite within its first ${FIRST_LINES} lines`, () => {
    expect(firstScreens).to.include('npm ci && npm start').and.include('\nnpm test ').and.include('npm run test:short');
  });

  describe('your first message, as written', () => {
    let gw;
    let dir;
    let browser;
    const here = (text) => text.replaceAll('localhost:8080', `localhost:${gw.port}`);

    before(async () => {
      // `NAME=value … npm start -- flags`: the secrets in the environment, the rest as flags.
      const [, assignments, flags] = /^((?:GATEWAY_\w+=\S+ )*)npm start -- (.+)$/.exec(snippet('start'));
      const env = Object.fromEntries(assignments.trim().split(' ').filter(Boolean).map((pair) => pair.split('=')));
      expect(Object.keys(env)).to.include('GATEWAY_PUSHER_SECRET');
      gw = await startGateway(flags.split(' '), { env });
      // a folder in the checkout, as the README says, so `pusher-js` resolves from node_modules
      dir = await mkdtemp(path.join(ROOT, 'test', 'artifacts', 'first-message-'));
    });
    after(async () => {
      await browser?.close();
      await gw?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
    });

    it('shows a curl publish on the browser page, opened as a file', async () => {
      const page = path.join(dir, 'first.html');
      await writeFile(page, here(snippet('browser')));
      browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
      const tab = await browser.newPage();
      const errors = [];
      tab.on('pageerror', (err) => errors.push(String(err)));
      await tab.goto(pathToFileURL(page).href);
      const log = () => tab.locator('#log').innerText();
      await eventually(async () => (await log()).includes('subscribed to news'), { what: 'the page subscribed', timeout: 20000 });

      const curl = snippet('curl');
      expect(curl).to.match(/^curl /);
      const published = await run('bash', ['-c', here(curl)]);
      expect(published.code, published.stderr).to.equal(0);
      expect(JSON.parse(published.stdout)).to.deep.equal({ seq: 1 });
      await eventually(async () => (await log()).includes('#1 {"text":"hello"}'), { what: 'the page shows the message', timeout: 20000 });
      expect(errors).to.deep.equal([]);
    });

    it('delivers to the pusher-js script, which prints the event and exits', async () => {
      const script = path.join(dir, 'first-pusher.mjs');
      await writeFile(script, here(snippet('pusher')).replaceAll("wsPort: 8080", `wsPort: ${gw.port}`).replaceAll("port: '8080'", `port: '${gw.port}'`));
      const result = await run(process.execPath, [script]);
      expect(result.code, result.stderr).to.equal(0);
      expect(result.stdout).to.include("pusher-js received { text: 'hello' }");
    });
  });
});
