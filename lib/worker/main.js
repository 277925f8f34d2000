// Entry point of a worker process, forked by the primary (cluster exec). The
// resolved configuration and the worker's number arrive in the environment.
import { startWorker } from './index.js';

startWorker(JSON.parse(process.env.GATEWAY_WORKER_CONFIG), Number(process.env.GATEWAY_WORKER_NUMBER));
