import { expect } from 'chai';
import { allows, compilePermissions } from '../lib/worker/permissions.js';

describe('channel permissions', () => {
  it('allows exact names, written prefixes and {sub}, and nothing else', () => {
    const { subscribe, publish } = compilePermissions('42', ['news', 'chat:*', 'user:{sub}', 'inbox:{sub}:*'], []);
    for (const channel of ['news', 'chat:1', 'chat:', 'user:42', 'inbox:42:a']) expect(allows(subscribe, channel), channel).to.equal(true);
    for (const channel of ['news2', 'chat', 'user:43', 'user:42x', 'inbox:43:a']) expect(allows(subscribe, channel), channel).to.equal(false);
    expect(allows(publish, 'news')).to.equal(false);
  });

  it('takes * alone only when written so, and a sub literally', () => {
    expect(allows(compilePermissions('u', ['*']).subscribe, 'anything')).to.equal(true);
    const star = compilePermissions('*', ['user:{sub}'], ['{sub}']);
    expect(allows(star.subscribe, 'user:*')).to.equal(true);
    expect(allows(star.subscribe, 'user:42')).to.equal(false);
    expect(allows(star.publish, 'news')).to.equal(false);
  });

  it('refuses claims of the wrong type or with malformed patterns', () => {
    expect(compilePermissions('u', 'chat:*')).to.be.a('string');
    expect(compilePermissions('u', [1])).to.be.a('string');
    expect(compilePermissions('u', ['a*b'])).to.be.a('string');
    expect(compilePermissions('u', ['**'])).to.be.a('string');
    expect(compilePermissions('u', ['{user}'])).to.be.a('string');
    expect(compilePermissions('u', [''])).to.be.a('string');
    expect(compilePermissions('u', undefined, { a: 1 })).to.be.a('string');
  });

  it('shares one compiled object between tokens with the same claims', () => {
    expect(compilePermissions('a', ['chat:*'])).to.equal(compilePermissions('b', ['chat:*']));
    expect(compilePermissions('a', ['user:{sub}'])).to.not.equal(compilePermissions('b', ['user:{sub}']));
  });
});
