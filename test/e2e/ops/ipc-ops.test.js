// IPC operation names (lib/core/ipc.js Op): a name no dispatcher knows, misspelt or
// never registered, fails loudly on both sides instead of being dropped.
import { expect } from 'chai';
import cluster from 'node:cluster';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { IpcBatch, Message, Op } from '../../../lib/core/ipc.js';
import { PrimaryRelay } from '../../../lib/primary/relay.js';
import { MemoryEngine } from '../../../lib/engines/memory.js';
import { resolveConfig } from '../../../lib/config/options.js';

const FIXTURE = fileURLToPath(new URL('../../fixtures/relay-worker.js', import.meta.url));
const ECHO = fileURLToPath(new URL('../../fixtures/batch-echo.js', import.meta.url));

describe('IPC operations', function () {
  it('a worker dies on an operation from the primary that it does not know', async function () {
    const child = fork(FIXTURE, { stdio: ['ignore', 'ignore', 'pipe', 'ipc'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const [ready] = await once(child, 'message');
    expect(ready.type).to.equal(Message.READY);
    child.send({ type: Message.BATCH, ops: [[Op.BUSY, false], ['mgs', 'c', 1, '{}']] });
    const [code] = await once(child, 'exit');
    expect(code).to.not.equal(0);
    expect(stderr).to.include('unknown IPC operation "mgs"');
  });

  it('sends an operation pushed for later with the next batch, in order, or on its own soon after', async function () {
    const child = fork(ECHO, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    try {
      await once(child, 'message');
      const batch = new IpcBatch(child);
      const next = async () => (await once(child, 'message'))[0].ops;
      batch.pushLater(['count', 1]);
      batch.push(['now', 2]);
      expect(await next()).to.deep.equal([['count', 1], ['now', 2]]);
      batch.pushLater(['count', 3]);
      batch.pushLater(['count', 4]);
      expect(await next()).to.deep.equal([['count', 3], ['count', 4]]);
      batch.push(['now', 5]);
      batch.pushLater(['count', 6]);
      expect(await next()).to.deep.equal([['now', 5], ['count', 6]]);
    } finally {
      child.kill();
    }
  });

  describe('the primary relay', function () {
    let worker;
    let engine;
    let relay;
    let published;

    before(async function () {
      cluster.setupPrimary({ exec: FIXTURE, silent: true });
      worker = cluster.fork();
      await once(worker, 'message');
      engine = new MemoryEngine(resolveConfig({}));
      published = 0;
      relay = new PrimaryRelay({ engine, onPublish: (n) => (published += n) });
      relay.attach(worker);
    });

    after(async function () {
      engine.stop();
      worker.kill();
      await once(worker, 'exit');
    });

    it('relays the operations it knows', function () {
      relay.receive(worker, [[Op.PUB, 0, 'c', '{}']]);
      expect(published).to.equal(1);
    });

    it('throws on an operation no one handles', function () {
      expect(() => relay.receive(worker, [['pbu', 0, 'c', '{}']])).to.throw(TypeError, 'unknown IPC operation "pbu"');
    });

    it('takes no hook name for an operation: a worker cannot send "detach"', function () {
      relay.onDetach(() => expect.fail('detach called by an operation'));
      expect(() => relay.receive(worker, [['detach']])).to.throw(TypeError, 'unknown IPC operation "detach"');
    });
  });
});
