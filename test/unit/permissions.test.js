import { expect } from 'chai';
import { allows, compilePermissions, PermissionsCache } from '../../lib/core/permissions.js';

describe('channel permissions', () => {
  it('allows exact names, written prefixes and {sub}, and nothing else', () => {
    const { subscribe, publish } = compilePermissions(['news', 'chat:*', 'user:{sub}', 'inbox:{sub}:*', '{sub}/{sub}'], []);
    for (const channel of ['news', 'chat:1', 'chat:', 'user:42', 'inbox:42:a', '42/42']) {
      expect(allows(subscribe, channel, '42'), channel).to.equal(true);
    }
    for (const channel of ['news2', 'chat', 'user:43', 'user:42x', 'user:4', 'inbox:43:a', 'inbox:42', '42/43']) {
      expect(allows(subscribe, channel, '42'), channel).to.equal(false);
    }
    expect(allows(publish, 'news', '42')).to.equal(false);
  });

  it('takes * alone only when written so, and a sub literally', () => {
    expect(allows(compilePermissions(['*']).subscribe, 'anything', 'u')).to.equal(true);
    const star = compilePermissions(['user:{sub}'], ['{sub}']);
    expect(allows(star.subscribe, 'user:*', '*')).to.equal(true);
    expect(allows(star.subscribe, 'user:42', '*')).to.equal(false);
    expect(allows(star.publish, 'news', '*')).to.equal(false);
  });

  it('refuses claims of the wrong type or with malformed patterns', () => {
    for (const [subscribe, publish] of [['chat:*'], [[1]], [['a*b']], [['**']], [['{user}']], [['']], [['{sub']], [undefined, { a: 1 }]]) {
      expect(compilePermissions(subscribe, publish), JSON.stringify([subscribe, publish])).to.be.a('string');
    }
  });

  it('shares one compiled object between tokens with the same claims, {sub} or not, within one cache', () => {
    const cache = new PermissionsCache();
    expect(cache.compile(['chat:*'])).to.equal(cache.compile(['chat:*']));
    expect(cache.compile(['user:{sub}'], ['x'])).to.equal(cache.compile(['user:{sub}'], ['x']));
    expect(cache.compile(['a'])).to.not.equal(cache.compile(['b']));
    expect(cache.compile(['a'])).to.not.equal(new PermissionsCache().compile(['a'])); // nothing shared between caches
    expect(cache.compile('a')).to.be.a('string'); // a refusal, never cached
  });
});
