// The supported runtime (Node 22.12+) and the internals the gateway leans
// on: every entry point refuses an older Node in one line; the ws internals
// are where the gateway reads them; the hand-over line never waits forever.
import { spawnSync } from 'node:child_process';
import { EventEmitter } from 'node:events';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { olderThan } from '../../../lib/runtime/node-version.js';
import { InternalsChanged, checkShardSubscribers, checkWs, takeConnections } from '../../../lib/runtime/internals.js';
import { HandOverLine } from '../../../lib/primary/master.js';

const ROOT = fileURLToPath(new URL('../../..', import.meta.url));
// Node's own version made to read as `version` before the entry point loads.
const pretend = (version) => `data:text/javascript,Object.defineProperty(process.versions,'node',{value:'${version}'})`;
const ENTRY_POINTS = [
  ['bin/gateway.js', '--help'],
  ['bin/gateway.js', 'doctor', '--help'],
  ['bin/loadgen.js', '--help'],
  ['scripts/soak.js', '--help'],
  ['scripts/bench.js', '--help'],
  ['scripts/reconnect-storm.js', '--help']
];

describe('runtime: Node 22.12 or later', function () {
  this.timeout(30000);

  for (const [file, ...args] of ENTRY_POINTS) {
    it(`${file} ${args.join(' ')}: Node 22.11.9 exits 1 with one line naming both versions; 22.12.0 starts`, () => {
      const old = spawnSync(process.execPath, ['--import', pretend('22.11.9'), file, ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(old.status).to.equal(1);
      expect(old.stdout).to.equal('');
      expect(old.stderr).to.equal('Node.js 22.11.9 found; this gateway needs Node.js 22.12 or later (>=22.12)\n');
      const floor = spawnSync(process.execPath, ['--import', pretend('22.12.0'), file, ...args], { cwd: ROOT, encoding: 'utf8' });
      expect(floor.stderr).to.not.include('found; this gateway needs');
    });
  }

  it('compares versions part by part', () => {
    expect(olderThan('20.20.2', '22.12')).to.equal(true);
    expect(olderThan('22.11.99', '22.12')).to.equal(true);
    expect(olderThan('22.12.0', '22.12')).to.equal(false);
    expect(olderThan('22.100.0', '22.12')).to.equal(false);
    expect(olderThan('26.0.0', '22.12')).to.equal(false);
  });
});

describe('internals', () => {
  it('finds the ws fields and events the gateway reads in the installed ws', () => {
    expect(() => checkWs()).to.not.throw();
  });

  it("refuses an ioredis Cluster without its sharded subscribers, naming them", () => {
    expect(() => checkShardSubscribers({})).to.throw(InternalsChanged, 'shardedSubscribers');
  });

  it('refuses a listener whose handle has no onconnection, naming it', () => {
    const server = net.createServer(); // not listening: no handle
    expect(() => takeConnections(server, () => {}))
      .to.throw(InternalsChanged)
      .with.property('message')
      .that.includes('onconnection');
  });

  it('the hand-over line moves on when an acknowledgement never comes, and counts it', () => {
    // Node's send queue starts null (free); this stand-in writes every send at once.
    const process = Object.assign(new EventEmitter(), { _handleQueue: null });
    const worker = { process, sent: [], send: (msg, handle, opts, done) => (worker.sent.push(msg), done()) };
    let stalls = 0;
    const line = new HandOverLine(worker, () => stalls++);
    const handle = () => ({ close() {} });
    const window = HandOverLine.WINDOW;
    for (let n = 1; n <= window + 1; n++) line.push(handle(), { n });
    expect(worker.sent).to.have.length(window); // the last waits: the window is full
    line.watch(); // the watchdog's first visit sees the oldest send waiting
    expect(worker.sent).to.have.length(window);
    line.watch(); // still waiting a visit later: given up on, and the window moves
    expect(stalls).to.equal(1);
    expect(worker.sent.at(-1)).to.deep.equal({ n: window + 1 });
    process.emit('internalMessage', { cmd: 'NODE_HANDLE_ACK' }); // the late one, for the handle given up on
    for (let n = 2; n <= window + 1; n++) process.emit('internalMessage', { cmd: 'NODE_HANDLE_ACK' });
    expect(line.unacked).to.equal(0);
    line.watch();
    line.push(handle(), { n: window + 2 });
    expect(worker.sent).to.have.length(window + 2);
    expect(stalls).to.equal(1);
  });
});
