// SIGHUP reads the configuration again (the --config file, the flags and the
// environment as the gateway was started with) for the rolling restart that
// follows: the new workers start with it, the engine takes the new
// namespaces. A configuration that no longer passes its checks is refused
// whole: the running workers are kept and the log says why.
import { gatewayConfig } from '../config/file.js';

// What the primary set up once at start (its listener, engine, counts, the
// workers' V8 flags): a change takes a full restart.
const AT_START = [
  'port', 'host', 'workers', 'backlog', 'balance', 'proxyProtocol', 'proxyTimeout', 'maxConnsPerIp', 'maxConnsPerUser', 'auth',
  'engine', 'redisUrl', 'metricsPort', 'metricsHost', 'maxOldSpaceSize', 'maxSemiSpaceSize', 'logLevel', 'logFormat', 'config',
  'webhookUrl', 'webhookSecret', 'memberGrace', 'adminPassword', 'appsDatabase'
];

/**
 * @param {object} current the running configuration
 * @param {Record<string, string>} withheld the secret variables taken out of the environment at start
 * @param {import('pino').Logger} log
 * @returns {Promise<object|undefined>} the configuration to restart with; undefined: keep the workers
 */
export async function reloadConfig(current, withheld, log) {
  let next;
  try {
    next = await gatewayConfig(process.argv.slice(2), withheld);
  } catch (err) {
    log.error({ err: err.message }, 'SIGHUP: the configuration is refused; the running workers are kept');
    return undefined;
  }
  const kept = AT_START.filter((key) => JSON.stringify(next[key]) !== JSON.stringify(current[key]));
  if (kept.length > 0) log.warn({ options: kept }, 'SIGHUP: these options take a full restart; kept as they are');
  for (const key of AT_START) next[key] = current[key];
  return next;
}
