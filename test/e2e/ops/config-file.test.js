// --config FILE: read through the options table, under the flags and the
// environment; a bad file is refused at start (exit 2, naming the file, the
// key and why) and at SIGHUP (the running workers stay).
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { startGateway, eventually } from '../../../scripts/harness/gateway.js';
import { api, configFile } from '../../helpers/api.js';
import { API_KEY } from '../../helpers/client-helpers.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));

/** Runs the gateway with a config file; resolves {code, stderr}. */
function refused(content) {
  const file = configFile(content);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [GATEWAY, '--config', file, '--port', '0', '--metrics-port', '0'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stderr, file }));
  });
}

describe('config file', function () {
  it('refuses a bad file at start: exit 2 naming the file, the key and why', async () => {
    const cases = [
      ['{"historySize": 10', 'not JSON'],
      [{ historySise: 10 }, 'historySise: unknown key'],
      [{ historySize: '10' }, 'historySize: must be a number'],
      [{ historySize: -1 }, 'historySize: --history-size must be at least 0'],
      [{ namespaces: [{ name: 'chat:x' }] }, `namespaces[0].name: must be 1 to 64 characters`],
      [{ namespaces: [{ name: '' }] }, 'namespaces[0].name'],
      [{ namespaces: [{ name: 'chat' }, { name: 'chat' }] }, 'namespaces[1].name: duplicate namespace "chat"'],
      [{ namespaces: [{ name: 'chat', latest: 'yes' }] }, 'namespaces[0].latest: must be a boolean'],
      [{ namespaces: [{ name: 'chat', presense: true }] }, 'namespaces[0].presense: unknown key']
    ];
    const results = await Promise.all(cases.map(([content]) => refused(content)));
    results.forEach(({ code, stderr, file }, i) => {
      expect(code, stderr).to.equal(2);
      expect(stderr).to.include(`--config ${file}: `).and.include(cases[i][1]);
    });
  });

  it('refuses a namespace that asks for a hook the flags do not name', async () => {
    for (const [key, flag] of [
      ['subscribeHook', '--subscribe-hook'],
      ['publishHook', '--publish-hook']
    ]) {
      const { code, stderr } = await refused({ namespaces: [{ name: 'chat', [key]: true }] });
      expect(code, stderr).to.equal(2);
      expect(stderr).to.include(`namespace chat has ${key}: true: give ${flag}`);
    }
  });

  it('takes every flag under its camelCase name, under the flags and GATEWAY_*; SIGHUP reads it again, a bad file keeps the workers', async () => {
    const file = configFile({ historySize: 3, maxPayload: 1000, apiKey: API_KEY, workers: 1 });
    const gw = await startGateway(['--config', file, '--max-payload', '2000'], { env: { GATEWAY_HISTORY_SIZE: '4' } });
    try {
      const big = JSON.stringify({ channel: 'c', data: 'x'.repeat(1500) });
      expect((await api(gw, 'publish', {}, { body: big })).status).to.equal(200); // the flag's 2000, not the file's 1000
      for (let i = 0; i < 6; i++) await api(gw, 'publish', { channel: 'c', data: i });
      expect((await api(gw, 'history', { channel: 'c' })).body.result.messages).to.have.length(4); // the environment's 4
      expect((await api(gw, 'history', { channel: 'chat:1' })).status).to.equal(200);

      writeFileSync(file, JSON.stringify({ namespaces: [{ name: 'chat' }], histrySize: 1 }));
      gw.signal('SIGHUP');
      const refusal = await gw.waitForLog((l) => l.msg?.startsWith('SIGHUP: the configuration is refused'));
      expect(refusal.err).to.include('histrySize: unknown key');
      expect(gw.logs.some((l) => l.msg === 'rolling restart')).to.equal(false);

      writeFileSync(file, JSON.stringify({ apiKey: API_KEY, workers: 1, namespaces: [{ name: 'chat' }] }));
      gw.signal('SIGHUP');
      await gw.waitForLog((l) => l.msg === 'rolling restart done', 20000);
      await eventually(async () => (await api(gw, 'history', { channel: 'other:1' })).status === 400, { what: 'namespaces from the file' });
      expect((await api(gw, 'history', { channel: 'chat:1' })).status).to.equal(200);
    } finally {
      await gw.stop();
    }
  });
});
