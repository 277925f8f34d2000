// The heap flags the primary gives its workers, read from their command
// lines: a real gateway (so not with the fast option checks in config.unit.test.js).
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { startGateway } from '../../../scripts/harness/gateway.js';

describe('worker V8 flags', function () {
  const argvOf = (pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
  let gw;
  afterEach(() => gw?.stop());

  it('caps every worker\'s young generation whatever flags the primary got', async () => {
    gw = await startGateway();
    for (const worker of [1, 2]) expect(argvOf(gw.workerPid(worker))).to.include('--max-semi-space-size=2');
    expect(argvOf(gw.proc.pid)).not.to.include('--max-semi-space-size=2');
  });

  it('passes --max-semi-space-size and --max-old-space-size on, after any of the primary\'s own', async () => {
    gw = await startGateway(['--max-semi-space-size', '8', '--max-old-space-size', '512']);
    const argv = argvOf(gw.workerPid(1));
    expect(argv).to.include('--max-old-space-size=512');
    expect(argv.filter((a) => a.startsWith('--max-semi-space-size='))).to.deep.equal(['--max-semi-space-size=8']);
  });
});
