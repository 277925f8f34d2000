// Gateway nodes sharing one throwaway redis-server, started together and
// ready once every node's engine is up.
import { startGateway, eventually } from '../../scripts/harness/gateway.js';
import { RedisServer } from '../../scripts/harness/redis.js';

/**
 * @param {string[]} args each node's arguments, less the engine's
 * @returns {Promise<{redis: RedisServer, nodes: import('../../scripts/harness/gateway.js').Gateway[], args: string[]}>} `args` with the engine's: for another node
 */
export async function startRedisNodes(args, count = 2) {
  const redis = await RedisServer.start();
  const all = [...args, '--engine', 'redis', '--redis-url', redis.url];
  const nodes = await Promise.all([...Array(count)].map(() => startGateway(all)));
  for (const node of nodes) await eventually(async () => (await node.metric('gateway_engine_up')) === 1, { what: 'the engine up' });
  return { redis, nodes, args: all };
}
