// A listener whose port is taken ends the gateway with exit code 1 and one
// line an operator can act on: the flag that chose the port, and the port;
// never a stack trace. The public port under both ways of listening (the
// primary's, and each worker's under reuseport), and the metrics port (the
// status and admin pages' listener).
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import net from 'node:net';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';

const GATEWAY = fileURLToPath(new URL('../../../bin/gateway.js', import.meta.url));

describe('a taken port ends the gateway with one line naming the flag', function () {
  this.timeout(30000);
  let taken;
  let port;

  before(async () => {
    taken = net.createServer().listen(0, '127.0.0.1');
    await once(taken, 'listening');
    port = String(taken.address().port);
  });
  after(() => taken?.close());

  /** Runs the gateway to its end: its exit code and every line it wrote. */
  async function run(args) {
    const proc = spawn(process.execPath, [GATEWAY, '--host', '127.0.0.1', '--workers', '1', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    proc.stdout.on('data', (d) => (output += d));
    proc.stderr.on('data', (d) => (output += d));
    const [code] = await once(proc, 'exit');
    return { code, lines: output.split('\n').filter(Boolean) };
  }

  /** The one fatal line, checked to name `flag` and the port, with no stack trace anywhere. */
  function expectOneLine({ code, lines }, flag) {
    expect(code, lines.join('\n')).to.equal(1);
    expect(lines.filter((l) => /^\s+at /.test(l)), 'no stack trace').to.deep.equal([]);
    const fatal = lines.filter((l) => l.startsWith('{') && JSON.parse(l).level === 60);
    expect(fatal, lines.join('\n')).to.have.lengthOf(1);
    const { err, code: errorCode } = JSON.parse(fatal[0]);
    expect(err).to.include(`${flag} ${port}:`).and.include('the port is taken');
    expect(errorCode).to.equal('listen');
  }

  it('--port, taken, under --balance ip', async () => {
    expectOneLine(await run(['--port', port, '--metrics-port', '0']), '--port');
  });

  it('--port, taken, under --balance reuseport', async () => {
    expectOneLine(await run(['--port', port, '--balance', 'reuseport', '--metrics-port', '0']), '--port');
  });

  it('--metrics-port, taken (the status and admin pages)', async () => {
    expectOneLine(await run(['--port', '0', '--metrics-port', port, '--admin-password', 'a-password-of-some-length']), '--metrics-port');
  });
});
