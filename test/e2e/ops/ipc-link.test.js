// A question over the IPC with a deadline (lib/core/ipc-link.js askWithin): the
// other side is a real child process that echoes each batch it gets and
// answers nothing, so the test plays the answering side from the echoed
// question's token.
import { expect } from 'chai';
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { IpcLink } from '../../../lib/core/ipc-link.js';
import { Op } from '../../../lib/core/ipc.js';
import { ErrorCode, GatewayError } from '../../../lib/core/errors.js';

const ECHO = fileURLToPath(new URL('../../fixtures/batch-echo.js', import.meta.url));

describe('IPC questions with a deadline', function () {
  let child;
  let link;

  beforeEach(async function () {
    child = fork(ECHO, { stdio: ['ignore', 'ignore', 'inherit', 'ipc'] });
    await once(child, 'message');
    link = new IpcLink(child);
  });

  afterEach(function () {
    child.kill();
  });

  /** The question as the child received it: [name, token, ...fields]. */
  async function asked() {
    const [{ ops }] = await once(child, 'message');
    return ops[0];
  }

  it('fails as unavailable when no answer comes in time, keeps no waiter, and ignores the late answer', async function () {
    const question = link.askWithin(200, 'q', 'field');
    const [name, token, field] = await asked();
    expect([name, field]).to.deep.equal(['q', 'field']);
    expect(link.waiting.has(token)).to.equal(true);
    const err = await question.then(
      () => null,
      (e) => e
    );
    expect(err).to.be.instanceOf(GatewayError);
    expect(err.code).to.equal(ErrorCode.UNAVAILABLE);
    expect(err.message).to.equal('no answer within 0.2 s');
    expect(link.waiting.size).to.equal(0);
    link.settle([Op.ANSWER, token, 'late']); // finds nobody waiting
    expect(link.waiting.size).to.equal(0);
  });

  it('settles with the answer or the failure that comes in time', async function () {
    const answered = link.askWithin(10000, 'q');
    link.settle([Op.ANSWER, (await asked())[1], 'yes']);
    expect(await answered).to.equal('yes');
    const failed = link.askWithin(10000, 'q');
    link.settle([Op.FAILED, (await asked())[1], ErrorCode.NOT_FOUND, 'no such thing']);
    const err = await failed.then(
      () => null,
      (e) => e
    );
    expect([err.code, err.message]).to.deep.equal([ErrorCode.NOT_FOUND, 'no such thing']);
    expect(link.waiting.size).to.equal(0);
  });

  it('fails every question still waiting when the other side is gone', async function () {
    const question = link.askWithin(10000, 'q');
    await asked();
    link.close('the worker exited');
    const err = await question.then(
      () => null,
      (e) => e
    );
    expect([err.code, err.message]).to.deep.equal([ErrorCode.UNAVAILABLE, 'the worker exited']);
  });
});
