// Entry point of a worker process, forked by the primary (cluster exec). The
// resolved configuration and the worker's number arrive as the primary's
// first IPC message, never in the environment (../ipc.js, whenStarted).
import { startWorker } from './index.js';
import { whenStarted } from '../core/ipc.js';

whenStarted(startWorker);
