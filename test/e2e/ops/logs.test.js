// What a person sees at start: the "gateway ready" line naming every URL the
// gateway serves, as JSON through a pipe (what scripts and log collectors
// read) and as a readable line on a terminal (run under a pseudo-terminal
// with util-linux's `script`); and no machine-limit warning where the
// configuration fits the machine.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import WebSocket from 'ws';
import { startGateway, freePort, eventually } from '../../../scripts/harness/gateway.js';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));
const PUSHER = ['--pusher-app-id', '7', '--pusher-key', 'first-key', '--pusher-secret', 'first-secret-0123456789'];
const ADMIN = ['--admin-password', 'first-hour-password'];

describe('the ready line and the start-up warnings', function () {
  this.timeout(60000);

  it('names every URL served, the balance mode and the workers, in JSON through a pipe; no limit warning at --max-connections 1000', async () => {
    const gw = await startGateway(['--max-connections', '1000', ...PUSHER, ...ADMIN]);
    try {
      const ready = gw.logs.find((l) => l.msg === 'gateway ready');
      const port = gw.port;
      const operator = `http://127.0.0.1:${gw.metricsPort}`;
      expect(ready).to.include({
        websocket: `ws://localhost:${port}/ws`,
        sse: `http://localhost:${port}/sse?channels=<channel>`,
        client: `http://localhost:${port}/client.js`,
        pusher: `ws://localhost:${port}/app/first-key`,
        status: `${operator}/`,
        metrics: `${operator}/metrics`,
        admin: `${operator}/admin`,
        balance: 'ip',
        workers: 2
      });
      // each URL answers
      const socket = new WebSocket(ready.websocket);
      await once(socket, 'open');
      socket.close();
      for (const url of [ready.client, ready.status, ready.metrics, ready.admin]) expect((await fetch(url)).status, url).to.equal(200);
      const warnings = gw.logs.filter((l) => l.level === 40 && !l.msg.startsWith('--auth none'));
      expect(warnings.map((l) => l.msg)).to.deep.equal([]);
      expect(gw.logs.some((l) => l.msg.startsWith('each worker takes'))).to.equal(false);
    } finally {
      await gw.stop();
    }
  });

  it('leaves the Pusher and admin URLs out when they are off', async () => {
    const gw = await startGateway([]);
    try {
      const ready = gw.logs.find((l) => l.msg === 'gateway ready');
      expect(ready).to.not.have.any.keys('pusher', 'admin');
      expect(ready).to.include({ websocket: `ws://localhost:${gw.port}/ws` });
    } finally {
      await gw.stop();
    }
  });

  it('prints one readable line per event on a terminal, the workers\' lines too', async () => {
    const metricsPort = await freePort();
    const args = ['--port', '0', '--metrics-port', String(metricsPort), '--workers', '2', '--drain-timeout', '0', '--log-level', 'debug', ...PUSHER];
    // `script` gives the gateway a pseudo-terminal for its stdout; the shell
    // says the gateway's pid first (exec keeps it), so it can be stopped.
    const command = `echo "pid $$"; exec ${[process.execPath, GATEWAY, ...args].join(' ')}`;
    const term = spawn('script', ['-qec', command, '/dev/null'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let text = '';
    term.stdout.on('data', (d) => (text += d.toString().replace(/\x1b\[[0-9;]*m/g, '')));
    const pid = () => Number(/pid (\d+)/.exec(text)?.[1]);
    try {
      await eventually(() => expect(text).to.match(/primary: gateway ready /), { timeout: 30000 });
      const line = text.split(/\r?\n/).find((l) => l.includes('primary: gateway ready'));
      expect(line).to.match(/^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: primary: gateway ready websocket=ws:\/\/localhost:\d+\/ws /);
      expect(line).to.include(' pusher=ws://localhost:').and.include(`status=http://127.0.0.1:${metricsPort}/ metrics=http://127.0.0.1:${metricsPort}/metrics`);
      expect(line).to.match(/ balance=ip workers=2 /);
      expect(text).to.match(/DEBUG: worker [12]: worker started/); // a worker's line, through the primary
      expect(text).to.not.include('{"level"');
    } finally {
      if (pid() > 0) process.kill(pid(), 'SIGTERM');
      await once(term, 'exit');
    }
  });
});
