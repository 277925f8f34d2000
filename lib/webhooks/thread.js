// The webhook sender's thread (./delivery.js starts it in the primary): every
// target's queue, batches, signatures and HTTP requests live here, on an
// event loop of their own, so a slow endpoint or a huge list of targets
// never delays the primary's hand-over of connections or its IPC. It accepts
// no connection. Messages in: ['define', key, app, targets], ['event', key,
// event], ['retire', key, id], ['close']; out: ['count', result, events,
// app], ['log', level, fields, message], ['retired', id], ['closed'].
import { readlinkSync } from 'node:fs';
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';
import { WebhookQueue } from './queue.js';
import { webhookClient, webhookSender } from './send.js';

// Background work: when the cores are busy, the threads that accept and serve
// connections go first. Linux keeps a nice value per thread, and
// /proc/thread-self names this one's id; elsewhere it runs at the process's.
const BACKGROUND_NICE = 10;
try {
  setPriority(Number(readlinkSync('/proc/thread-self').split('/').pop()), BACKGROUND_NICE);
} catch {
  // not Linux, or not allowed: the process's priority
}

const client = webhookClient();
const groups = new Map(); // key -> Group: an app's targets, or the native webhook's
const tell = (message) => parentPort.postMessage(message);

/** One key's targets, each with the events it asked for (undefined: all) and its queue. */
class Group {
  constructor(app, targets) {
    this.targets = targets.map((target) => {
      const log = logFor({ app, url: target.url });
      const queue = new WebhookQueue({
        post: webhookSender(client, target),
        count: (result, events) => tell(['count', result, events, app]),
        log,
        format: (timeMs, events) => JSON.stringify({ [target.timeKey]: timeMs, events })
      });
      return { events: target.events === undefined ? undefined : new Set(target.events), queue };
    });
  }

  add(event) {
    for (const { events, queue } of this.targets) if (events === undefined || events.has(event.name)) queue.add(event);
  }

  /** Resolves once what is queued is sent (or given up); then no more attempts. */
  async retire() {
    await Promise.all(this.targets.map(({ queue }) => queue.whenEmpty()));
    this.stop();
  }

  stop() {
    for (const { queue } of this.targets) queue.stop();
  }
}

/** A logger's shape whose lines the primary writes, with the target named. */
function logFor(base) {
  const at = (level) => (fields, message) => tell(['log', level, { ...base, ...fields }, message]);
  return { info: at('info'), warn: at('warn'), error: at('error') };
}

parentPort.on('message', ([op, key, arg, more]) => {
  if (op === 'event') return groups.get(key)?.add(arg);
  if (op === 'define') {
    groups.get(key)?.retire();
    return groups.set(key, new Group(arg, more));
  }
  if (op === 'retire') {
    const group = groups.get(key);
    groups.delete(key);
    return void (group?.retire() ?? Promise.resolve()).then(() => tell(['retired', arg]));
  }
  if (op === 'close') {
    for (const group of groups.values()) group.stop();
    void client.close().finally(() => tell(['closed']));
  }
});
