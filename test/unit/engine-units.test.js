// The engines' parts alone, in this process: an engine takes a missing
// option's default and refuses a non-finite one that sets a timer or a bound
// (a timer of NaN ms is a 1 ms busy loop), before any connection is made, and
// each of its parts refuses a missing one; the
// idempotency keys give one answer per (channel, key) and keep their bound;
// publish takes a publication and answers a result.
import { expect } from 'chai';
import { MemoryEngine } from '../../lib/engines/memory.js';
import { RedisEngine } from '../../lib/engines/redis.js';
import { RedisPresence } from '../../lib/engines/redis/presence.js';
import { RedisPublisher } from '../../lib/engines/redis/publisher.js';
import { IDEMPOTENCY_WINDOW_MS, IdempotencyKeys } from '../../lib/engines/idempotency.js';
import { ablyNamespaces } from '../../lib/ably/index.js';
import { Apps } from '../../lib/pusher/apps.js';
import { resolveConfig } from '../../lib/config/options.js';

const quiet = { info() {}, warn() {}, error() {} };
// A Redis nobody listens on: a constructor that got past its checks would try it (lazily, in the background).
const NOWHERE = 'redis://127.0.0.1:1';

describe('engine units', function () {
  describe('options that set timers', function () {
    const redisOptions = () => ({ ...resolveConfig({ engine: 'redis', redisUrl: NOWHERE }), log: quiet });

    for (const name of ['presenceTtl', 'historyTtl', 'redisWaitTimeout', 'redisWaitReplicas', 'presenceMaxClients', 'joinLeaveInterval']) {
      for (const [what, value] of [
        ['NaN', NaN],
        ['Infinity', Infinity],
        ['a string', '60']
      ]) {
        it(`RedisEngine refuses ${name} ${what}, naming it`, function () {
          const options = redisOptions();
          options[name] = value;
          expect(() => new RedisEngine(options)).to.throw(RangeError, new RegExp(`^RedisEngine: option ${name} must be a finite number`));
        });
      }
    }

    it('RedisEngine refuses a TTL of 0 (a timer of 0 ms)', function () {
      expect(() => new RedisEngine({ ...redisOptions(), presenceTtl: 0 })).to.throw(RangeError, /presenceTtl must be a finite number of at least 1, got 0/);
    });

    for (const name of ['historyTtl', 'historySize', 'historyMemory', 'presenceMaxClients', 'joinLeaveInterval']) {
      it(`MemoryEngine refuses ${name} NaN, naming it`, function () {
        expect(() => new MemoryEngine({ [name]: NaN })).to.throw(RangeError, new RegExp(`^MemoryEngine: option ${name} must be a finite number .* got NaN$`));
      });
    }

    it("an engine given only some options takes the others' flag defaults", function () {
      const defaults = resolveConfig({});
      const engine = new MemoryEngine({ presenceMaxClients: 7, joinLeaveInterval: undefined });
      try {
        expect(engine.presence.maxClients).to.equal(7);
        expect(engine.presence.diffs.interval).to.equal(defaults.joinLeaveInterval);
        expect(engine.namespaces.top).to.include({ historySize: defaults.historySize, historyTtl: defaults.historyTtl });
        expect(engine.budget).to.equal(defaults.historyMemory * 2 ** 20);
      } finally {
        engine.stop();
      }
      for (const key of Object.keys(RedisEngine.DEFAULTS)) expect(RedisEngine.DEFAULTS[key], key).to.deep.equal(key === 'namespaces' ? [] : defaults[key]);
    });

    it('RedisPresence and RedisPublisher refuse theirs before touching Redis', function () {
      const redis = {
        defineCommand() {
          throw new Error('reached Redis');
        }
      };
      expect(() => new RedisPresence({ redis, ttl: undefined, maxClients: 10 })).to.throw(RangeError, /^RedisPresence: option ttl /);
      expect(() => new RedisPresence({ redis, ttl: 60, maxClients: NaN })).to.throw(RangeError, /^RedisPresence: option maxClients .* got NaN$/);
      expect(() => new RedisPresence({ redis, ttl: 60, maxClients: 10 })).to.throw(RangeError, /^RedisPresence: option interval .* got nothing$/);
      expect(() => new RedisPublisher({ redis, waitReplicas: 0 })).to.throw(RangeError, /^RedisPublisher: option waitTimeout /);
    });

    it('a complete configuration builds the memory engine', function () {
      new MemoryEngine(resolveConfig({})).stop();
    });
  });

  describe('idempotency keys', function () {
    it('answers the first publish of a (channel, key), on that channel only', function () {
      const keys = new IdempotencyKeys(10, 1000);
      expect(keys.find('a', 'k', 0)).to.equal(-1);
      keys.remember('a', 'k', 7, 12345, 0);
      const slot = keys.find('a', 'k', 10);
      expect([keys.seqAt(slot), keys.epochAt(slot)]).to.deep.equal([7, 12345]);
      expect(keys.find('b', 'k', 10)).to.equal(-1);
      // The separator is part of the name: "a b"+"c" is not "a"+"b c".
      keys.remember('a b', 'c', 8, 1, 0);
      expect(keys.find('a', 'b c', 10)).to.equal(-1);
    });

    it('tells apart two keys whose hashes collide', function () {
      // These two hash alike (32-bit FNV-1a over "c", a space and the key).
      const keys = new IdempotencyKeys(10, 1000);
      keys.remember('c', 'key-89059', 1, 1, 0);
      expect(keys.find('c', 'key-212822', 0)).to.equal(-1);
      keys.remember('c', 'key-212822', 2, 1, 0);
      expect(keys.seqAt(keys.find('c', 'key-89059', 0))).to.equal(1);
      expect(keys.seqAt(keys.find('c', 'key-212822', 0))).to.equal(2);
    });

    it('lets the oldest go past its bound (counted) and each key go after its window', function () {
      const keys = new IdempotencyKeys(3, 1000);
      for (let i = 1; i <= 4; i++) keys.remember('c', `k${i}`, i, 1, i);
      expect([keys.size, keys.dropped]).to.deep.equal([3, 1]);
      expect(keys.find('c', 'k1', 4)).to.equal(-1);
      expect(keys.seqAt(keys.find('c', 'k2', 4))).to.equal(2);
      expect(keys.find('c', 'k2', 1003)).to.equal(-1); // seen at 2: past its window at 1003
      expect(keys.seqAt(keys.find('c', 'k3', 1003))).to.equal(3); // seen at 3: just within it
      expect(keys.size).to.equal(2);
    });

    it('agrees with a plain Map through growth, wrap-around and drops', function () {
      const max = 3000;
      const keys = new IdempotencyKeys(max, 50);
      const model = new Map(); // name -> {seq, at}, oldest first
      let now = 0;
      for (let i = 0; i < 60000; i++) {
        if (i % 97 === 0) now++;
        const channel = `c${(i * 7919) % 31}`;
        const key = `k${(i * 104729) % (max * 2)}`;
        for (const [name, { at }] of model) {
          if (at >= now - 50) break;
          model.delete(name);
        }
        const known = model.get(`${channel}\n${key}`);
        const slot = keys.find(channel, key, now);
        expect(slot === -1 ? undefined : keys.seqAt(slot)).to.equal(known?.seq);
        if (slot !== -1) continue;
        if (model.size === max) model.delete(model.keys().next().value);
        model.set(`${channel}\n${key}`, { seq: i, at: now });
        keys.remember(channel, key, i, 1, now);
        expect(keys.size).to.equal(model.size);
      }
    });
    it('keeps a key for its namespace\'s window: an Ably nonce for the 20 minutes a TokenRequest is taken, anything else for the engines\' 5', function () {
      const apps = new Apps();
      apps.replace([{ appId: 'shop', key: 'shop-key', secret: 'shop-app-secret-0123456' }]);
      const engine = new MemoryEngine({ ...resolveConfig({}), protocolNamespaces: (config) => ablyNamespaces(config, apps) });
      const nonces = '#shop.ably-nonces:nonces';
      for (const channel of [nonces, '#shop.ably:chat', 'native']) engine.publish({ channel, data: '0', idempotencyKey: 'n-1' });
      engine.stop();
      expect(engine.keysOf(nonces).windowMs).to.equal(20 * 60 * 1000);
      expect([engine.keysOf('#shop.ably:chat').windowMs, engine.keysOf('native').windowMs]).to.deep.equal([IDEMPOTENCY_WINDOW_MS, IDEMPOTENCY_WINDOW_MS]);
      // Each ring holds its own, and the figures count them all.
      expect([engine.keysOf(nonces).size, engine.keysOf('native').size, engine.figures().idempotencyKeys]).to.deep.equal([1, 2, 3]);
    });
  });

  describe('publish', function () {
    it('takes a publication and answers a result to its reply; a duplicate and a stale version are skipped; an exclude travels with the message', function () {
      const engine = new MemoryEngine(resolveConfig({}));
      const answers = [];
      const reply = (name) => ({ answered: (result) => answers.push([name, result]) });
      const route = { ops: [], push: (op) => route.ops.push(op) };
      engine.subscribe('c', route, undefined, () => {});
      engine.publish({ channel: 'c', data: '1', idempotencyKey: 'x', version: 5 }, reply('first'));
      engine.publish({ channel: 'c', data: '2', idempotencyKey: 'x', version: 6 }, reply('duplicate'));
      engine.publish({ channel: 'c', data: '3', version: 5 }, reply('stale'));
      engine.publish({ channel: 'c', data: '4', exclude: 'sender' }); // nobody waits: answered to nobody
      engine.publish({ channel: 'c', data: '5' }, reply('last'));
      engine.stop();
      const epoch = answers[0][1].epoch;
      expect(answers).to.deep.equal([
        ['first', { seq: 1, epoch, skipped: undefined }],
        ['duplicate', { seq: 1, epoch, skipped: 'duplicate' }],
        ['stale', { seq: 1, epoch, skipped: 'stale' }],
        ['last', { seq: 3, epoch, skipped: undefined }]
      ]);
      expect(route.ops.filter((op) => op[0] === 'msg')).to.deep.equal([
        ['msg', 'c', 1, '1'],
        ['msg', 'c', 2, '4', 'sender'],
        ['msg', 'c', 3, '5']
      ]);
    });
  });
});
