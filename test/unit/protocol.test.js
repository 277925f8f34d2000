import { expect } from 'chai';
import { ErrorCode, GatewayError } from '../../lib/core/errors.js';
import { MAX_DATA_DEPTH } from '../../lib/protocol/limits.js';
import { isValidChannel, checkDepth } from '../../lib/protocol/validate.js';
import { parseClientFrame } from '../../lib/protocol/client-frame.js';
import { authAckFrame, messageFrame } from '../../lib/protocol/frames.js';
import { runMethod } from '../../lib/core/server.js';

const codeOf = (fn) => {
  try {
    fn();
  } catch (err) {
    expect(err).to.be.instanceOf(GatewayError);
    return err.code;
  }
  throw new Error('did not throw');
};

describe('protocol', () => {
  it('accepts channel names of 1 to 128 allowed characters only', () => {
    for (const ok of ['a', 'news', 'user:42', 'a_b.c-d@e/f', 'x'.repeat(128)]) expect(isValidChannel(ok), ok).to.equal(true);
    for (const bad of ['', 'x'.repeat(129), 'a b', 'é', 'a"b', 'a\nb', 5, null, undefined, ['a']]) {
      expect(isValidChannel(bad), String(bad)).to.equal(false);
    }
  });

  it('parses each client frame type and keeps the id', () => {
    expect(parseClientFrame('{"type":"ping","id":4}')).to.deep.equal({ type: 'ping', id: 4 });
    expect(parseClientFrame('{"type":"subscribe","channel":"n","id":"a"}')).to.deep.equal({ type: 'subscribe', id: 'a', channel: 'n' });
    expect(parseClientFrame('{"type":"unsubscribe","channel":"n"}')).to.deep.equal({ type: 'unsubscribe', id: undefined, channel: 'n' });
    expect(parseClientFrame('{"type":"publish","channel":"n","data":null}')).to.deep.equal({ type: 'publish', id: undefined, channel: 'n', data: null });
  });

  it('parses auth frames, and refuses them without a string', () => {
    expect(parseClientFrame('{"type":"auth","token":"t","id":1}')).to.deep.equal({ type: 'auth', id: 1, token: 't' });
    for (const bad of ['{"type":"auth"}', '{"type":"auth","token":""}', '{"type":"auth","token":["t"]}']) {
      expect(codeOf(() => parseClientFrame(bad)), bad).to.equal(ErrorCode.UNAUTHORIZED);
    }
    expect(JSON.parse(authAckFrame(1, 'u', 5))).to.deep.equal({ type: 'ack', id: 1, user: 'u', expiresAt: 5 });
  });

  it('refuses a disconnect (POST /disconnect, the server API) without a user of 1 to 128 characters', async () => {
    for (const bad of [{ user: 42 }, { user: '' }, {}, { user: 'u'.repeat(129) }]) {
      const err = await runMethod('disconnect', bad, { users: {} }).catch((e) => e); // refused before the users are asked
      expect(err, JSON.stringify(bad)).to.be.instanceOf(GatewayError);
      expect(err.code, JSON.stringify(bad)).to.equal(ErrorCode.BAD_REQUEST);
    }
  });

  it('gives bad_request or invalid_channel with the id for malformed frames', () => {
    expect(codeOf(() => parseClientFrame('nope'))).to.equal(ErrorCode.BAD_REQUEST);
    expect(codeOf(() => parseClientFrame('7'))).to.equal(ErrorCode.BAD_REQUEST);
    expect(codeOf(() => parseClientFrame('{"type":"subscribe","channel":"a b"}'))).to.equal(ErrorCode.INVALID_CHANNEL);
    expect(codeOf(() => parseClientFrame('{"type":"ping","id":true}'))).to.equal(ErrorCode.BAD_REQUEST);
    expect(codeOf(() => parseClientFrame(`{"type":"ping","id":"${'i'.repeat(129)}"}`))).to.equal(ErrorCode.BAD_REQUEST);
    try {
      parseClientFrame('{"type":"nope","id":9}');
    } catch (err) {
      expect(err.id).to.equal(9);
    }
  });

  it('refuses data nested deeper than the limit, without recursion', () => {
    const nested = (n) => '{"a":'.repeat(n) + '1' + '}'.repeat(n);
    expect(() => parseClientFrame(`{"type":"publish","channel":"c","data":${nested(MAX_DATA_DEPTH)}}`)).not.to.throw();
    expect(codeOf(() => parseClientFrame(`{"type":"publish","channel":"c","data":${nested(MAX_DATA_DEPTH + 1)}}`))).to.equal(
      ErrorCode.BAD_REQUEST
    );
    // Far deeper than any stack: still a clean error.
    expect(codeOf(() => checkDepth(JSON.parse(`${'['.repeat(100000)}${']'.repeat(100000)}`)))).to.equal(
      ErrorCode.BAD_REQUEST
    );
  });

  it('builds message frames that parse back to the published data', () => {
    const text = messageFrame('news', 17, JSON.stringify({ any: ['json', 1] }));
    expect(JSON.parse(text)).to.deep.equal({ type: 'message', channel: 'news', seq: 17, data: { any: ['json', 1] } });
  });
});
