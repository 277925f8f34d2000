// Each way a Pusher subscribe is refused, driven by a real connection: the
// channel's pusher:subscription_error carries the status and type pusher-js
// hands to the application, from the error family's code (lib/pusher/refusals.js).
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { channelAuth, RawPusher, startPusherGateway } from '../../helpers/pusher.js';

const FULL = { appId: 'full', key: 'full-key', secret: 'a-full-app-secret-0123456789', maxPresenceMembers: 1 };

describe('Pusher subscription errors', function () {
  this.timeout(30000);
  let gw, dir;
  const raws = [];
  const open = async (options) => {
    const raw = await RawPusher.open(gw, options);
    raws.push(raw);
    return { raw, socketId: await raw.socketId() };
  };
  const refusal = async (raw, channel) => (await raw.event('pusher:subscription_error', channel)).data;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'subscription-errors-'));
    const file = path.join(dir, 'gateway.json');
    writeFileSync(file, JSON.stringify({ pusherApps: [FULL] }));
    gw = await startPusherGateway(['--config', file]);
  });
  after(async () => {
    for (const raw of raws) raw.close();
    await gw?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers a bad name with InvalidChannel 400', async () => {
    const { raw } = await open();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'no spaces allowed' } });
    expect(await refusal(raw, 'no spaces allowed')).to.include({ type: 'InvalidChannel', status: 400 });
  });

  it('answers a bad signature with AuthError 401', async () => {
    const { raw } = await open();
    raw.send({ event: 'pusher:subscribe', data: { channel: 'private-orders', auth: 'app-key:0000' } });
    expect(await refusal(raw, 'private-orders')).to.include({ type: 'AuthError', status: 401 });
  });

  it('answers another user\'s channel, not signed in, with AuthError 403', async () => {
    const { raw } = await open();
    raw.send({ event: 'pusher:subscribe', data: { channel: '#server-to-user-42' } });
    expect(await refusal(raw, '#server-to-user-42')).to.include({ type: 'AuthError', status: 403 });
  });

  it('answers channel_data that is not a member with InvalidChannelData 400', async () => {
    const { raw, socketId } = await open();
    const channelData = '{"user_info":{}}'; // no user_id
    raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-room', auth: channelAuth(`${socketId}:presence-room:${channelData}`), channel_data: channelData } });
    const data = await refusal(raw, 'presence-room');
    expect(data).to.include({ type: 'InvalidChannelData', status: 400 });
    expect(data.error).to.include('user_id');
  });

  it('answers a presence channel past the app\'s members with LimitReached 403', async () => {
    const member = async (user) => {
      const { raw, socketId } = await open({ key: FULL.key });
      const channelData = JSON.stringify({ user_id: user });
      raw.send({ event: 'pusher:subscribe', data: { channel: 'presence-full', auth: channelAuth(`${socketId}:presence-full:${channelData}`, FULL), channel_data: channelData } });
      return raw;
    };
    await (await member('first')).event('pusher_internal:subscription_succeeded', 'presence-full');
    expect(await refusal(await member('second'), 'presence-full')).to.include({ type: 'LimitReached', status: 403 });
  });
});
