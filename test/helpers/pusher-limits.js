// What the Pusher app limit tests share: an app with every limit set low, and
// a raw connection's outcome.
import { eventually, RawPusher } from './pusher.js';

export const LIMITED = {
  appId: 'lim',
  key: 'lim-key',
  secret: 'limited-app-secret-0123',
  clientEvents: true,
  maxConnections: 3,
  maxClientEventsPerSecond: 2,
  maxBackendEventsPerSecond: 5,
  maxEventPayloadKb: 1,
  maxEventBatchSize: 2,
  maxEventChannels: 2,
  maxPresenceMemberInfoKb: 1
};

/** Opens a raw connection and says how it ended up: established, or the close code it got. */
export async function open(gw, app = LIMITED) {
  const raw = await RawPusher.open(gw, { key: app.key });
  const result = await Promise.race([raw.event('pusher:connection_established').then(() => 'established'), raw.closed.then(({ code }) => code)]);
  return { raw, result };
}

/** An established connection: the quota's count of connections closed by the test before may lag a moment. */
export async function admitted(gw, raws) {
  let raw;
  await eventually(async () => {
    const opened = await open(gw);
    raws.push(opened.raw);
    raw = opened.raw;
    return opened.result === 'established';
  }, { what: 'a connection within the quota' });
  return raw;
}

/** An SDK call's HTTP status, answered or thrown. */
export const status = (promise) => promise.then((res) => res.status, (err) => err.status);

