// Pusher apps in the configuration: from the --pusher-* flags or the config
// file's pusherApps, checked whole at start (a bad app is a usage error
// naming it), and their channels' namespaces.
import { expect } from 'chai';
import { resolveConfig } from '../../lib/config/options.js';
import { readConfigFile } from '../../lib/config/file.js';
import { Namespaces } from '../../lib/core/namespaces.js';
import { Apps, appsOf } from '../../lib/pusher/apps.js';
import { protocolNamespaces } from '../../lib/wiring/ways-in.js';
import { configFile } from '../helpers/api.js';

const APP = { appId: '1', key: 'k', secret: 'sixteen-chars-ok' };

describe('Pusher apps in the configuration', () => {
  it('takes one app from the flags and several from pusherApps', () => {
    const config = resolveConfig({ pusherAppId: '1', pusherKey: 'k', pusherSecret: APP.secret, pusherApps: [{ appId: '2', key: 'k2', secret: APP.secret, clientEvents: true }] });
    const apps = new Apps();
    const ns = new Namespaces(config, protocolNamespaces(apps));
    apps.replace(appsOf(config)); // the process's apps, which namespaces read as they are now
    expect(ns.lookup('#1.pres:presence-x')).to.include({ presence: true, clientPublish: false, latest: false });
    expect(ns.lookup('#2.priv:private-x')).to.include({ clientPublish: true });
    expect(ns.lookup('#2.pubc:cache-x')).to.include({ latest: true, historySize: 1 });
    expect(ns.lookup('#2.enc:private-encrypted-x')).to.include({ clientPublish: false });
    expect(ns.lookup('#3.pub:x')).to.equal(undefined); // no such app
    expect(ns.lookup('news')).to.include({ name: '' }); // native channels unchanged
  });

  it('refuses bad apps with the flag or key and why', () => {
    const cases = [
      [{ pusherAppId: '1', pusherKey: 'k' }, '--pusher-app-id needs --pusher-key and --pusher-secret'],
      [{ pusherKey: 'k' }, '--pusher-key needs --pusher-app-id'],
      [{ pusherAppId: '1', pusherKey: 'k', pusherSecret: 'short' }, '--pusher-secret must be at least 16 characters'],
      [{ pusherApps: [{ ...APP, secret: 'short' }] }, 'pusherApps[0]: secret must be a string of at least 16 characters'],
      [{ pusherApps: [{ ...APP, appId: 'a.b' }] }, 'pusherApps[0]: appId must be'],
      [{ pusherApps: [APP, { ...APP, key: 'other' }] }, 'pusherApps[1]: appId 1 is defined twice: pusherApps[0] and pusherApps[1]'],
      [{ pusherApps: [{ ...APP, colour: 'red' }] }, 'pusherApps[0]: colour: unknown key'],
      [{ pusherApps: [{ ...APP, maxPresenceMembers: 0 }] }, 'maxPresenceMembers must be an integer'],
      [{ pusherApps: [{ ...APP, webhookUrl: 'ftp://x' }] }, 'webhookUrl must be an http'],
      [{ pusherApps: [{ ...APP, webhooks: Array.from({ length: 101 }, (_, i) => ({ url: `http://h/${i}` })) }] }, 'pusherApps[0]: webhooks holds 101 targets: at most 100'],
      [{ pusherApps: {} }, 'pusherApps: must be an array'],
      [{ pusherApps: [{ ...APP, ablyCapability: { '*': ['read'] } }] }, 'pusherApps[0]: ablyCapability "*": the operations are publish, subscribe, presence, history, *'],
      [{ pusherApps: [{ ...APP, ablyCapability: [] }] }, 'ablyCapability must be an object of resources'],
      [{ pusherApps: [{ ...APP, ablyKeys: [{ keyId: 'ro', secret: 'short', capability: { '*': ['subscribe'] } }] }] }, 'ablyKeys [0].secret must be a string of at least 16'],
      [{ pusherApps: [{ ...APP, ablyKeys: [{ keyId: 'ro', secret: APP.secret }] }] }, 'ablyKeys [0].capability must be an object'],
      [{ pusherApps: [{ ...APP, ablyKeys: [{ keyId: 'k', secret: APP.secret, capability: { '*': ['*'] } }] }] }, "ablyKeys: keyId k is the app's own key"],
      [{ pusherApps: [{ ...APP, ablyKeys: Array.from({ length: 2 }, () => ({ keyId: 'twice', secret: APP.secret, capability: { '*': ['*'] } })) }] }, 'ablyKeys [1].keyId twice is given twice']
    ];
    for (const [given, message] of cases) expect(() => resolveConfig(given), message).to.throw(message);
  });

  it('reads pusherApps from the config file', () => {
    const values = readConfigFile(configFile({ pusherApps: [APP] }));
    expect(values.pusherApps).to.deep.equal([APP]);
  });
});
