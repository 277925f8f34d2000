// A private network for partition tests and benchmarks: each member
// (redis-server, a gateway node) runs in a network namespace of its own,
// linked by a veth pair to a bridge that lives in one more namespace (the
// hub), with an address on that bridge only (10.213.0.0/24). Nothing is
// routed to or from the machine's own network. A member is cut off by
// iptables DROP rules on its link, inside its namespace: no FIN, no RST,
// what a failed switch looks like. The test process reaches a member's
// ports through a forwarder (./netns-forward.js) over a Unix socket, which
// every namespace sees, so its own traffic stays on loopback.
//
// Needs root, `ip` and `iptables` (unsupported() says which is missing).
// Every namespace and process is removed by remove(), at the process's exit
// if not before, and those a crashed run left (the same name prefix, a pid
// no longer alive) when the next one starts.
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { once } from 'node:events';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';
import { fileURLToPath } from 'node:url';

const PREFIX = 'gwpt';
const SUBNET = '10.213.0';
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'];
const FORWARD = fileURLToPath(new URL('./netns-forward.js', import.meta.url));

/** Why a private network cannot be made here, or undefined. */
export function unsupported() {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  for (const tool of ['ip', 'iptables']) {
    try {
      execFileSync('sh', ['-c', `command -v ${tool}`], { stdio: 'ignore' });
    } catch {
      return `${tool} is not installed`;
    }
  }
  return undefined;
}

export class PrivateNet {
  /**
   * @param {string[]} members names ([a-z0-9], at most 8 characters), one namespace each
   * @returns {Promise<PrivateNet>} with every member linked to the bridge
   */
  static async create(members) {
    removeStale();
    const lab = new PrivateNet(members);
    process.once('exit', lab.removeNow);
    for (const signal of SIGNALS) process.once(signal, lab.removeOnSignal);
    try {
      lab.build();
    } catch (err) {
      lab.removeNow();
      throw err;
    }
    return lab;
  }

  constructor(members) {
    this.name = `${PREFIX}${process.pid}`;
    this.members = members;
    this.dir = mkdtempSync(path.join(os.tmpdir(), 'gateway-netns-'));
    this.children = new Set();
    this.sockets = 0;
    this.servers = new Set();
    this.cutOff = new Set(); // members whose link drops everything
    this.removeNow = () => this.removeSync();
    // Killed by a signal, the process has no 'exit': removed, then the signal's own end.
    this.removeOnSignal = (signal) => {
      this.removeSync();
      process.kill(process.pid, signal);
    };
  }

  namespace(member) {
    return `${this.name}-${member}`;
  }

  /** The member's address on the bridge. */
  address(member) {
    return `${SUBNET}.${this.members.indexOf(member) + 2}`;
  }

  build() {
    const hub = this.namespace('hub');
    ip('netns', 'add', hub);
    ip('-n', hub, 'link', 'add', 'br0', 'type', 'bridge');
    ip('-n', hub, 'link', 'set', 'br0', 'up');
    for (const [i, member] of this.members.entries()) {
      const ns = this.namespace(member);
      ip('netns', 'add', ns);
      ip('-n', hub, 'link', 'add', `v${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns);
      ip('-n', hub, 'link', 'set', `v${i}`, 'master', 'br0', 'up');
      ip('-n', ns, 'addr', 'add', `${this.address(member)}/24`, 'dev', 'eth0');
      ip('-n', ns, 'link', 'set', 'eth0', 'up');
      ip('-n', ns, 'link', 'set', 'lo', 'up');
    }
  }

  /** Starts `command` inside the member's namespace; it is killed by remove(). */
  spawn(member, command, args, options = {}) {
    const child = spawn('ip', ['netns', 'exec', this.namespace(member), command, ...args], options);
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    return child;
  }

  /** The prefix that runs a command inside the member's namespace (for startGateway). */
  prefix(member) {
    return ['ip', 'netns', 'exec', this.namespace(member)];
  }

  /**
   * Makes the member's ports (127.0.0.1 in its namespace) reachable from here.
   * @returns {Promise<number[]>} the ports on 127.0.0.1 here, in the same order
   */
  async expose(member, ports) {
    const paths = ports.map(() => path.join(this.dir, `s${++this.sockets}`));
    await this.forward(member, ports.map((port, i) => `unix:${paths[i]}=tcp:${port}`));
    return Promise.all(
      paths.map(async (socketPath) => {
        const server = net.createServer((inbound) => {
          const outbound = net.connect(socketPath);
          inbound.pipe(outbound).pipe(inbound);
          for (const [a, b] of [[inbound, outbound], [outbound, inbound]]) {
            a.on('error', () => b.destroy());
            a.on('close', () => b.destroy());
          }
        });
        this.servers.add(server);
        server.listen(0, '127.0.0.1');
        await once(server, 'listening');
        return server.address().port;
      })
    );
  }

  /**
   * Makes the Unix socket `socketPath` here (an HTTP server listening on it:
   * a webhook endpoint) reachable in the member's namespace as 127.0.0.1:`port`.
   */
  async reach(member, port, socketPath) {
    await this.forward(member, [`tcp:${port}=unix:${socketPath}`]);
  }

  async forward(member, specs) {
    const child = this.spawn(member, process.execPath, [FORWARD, ...specs], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines = readline.createInterface({ input: child.stdout });
    const [line] = await Promise.race([once(lines, 'line'), once(child, 'exit').then(() => ['exited'])]);
    if (line !== 'ready') throw new Error(`the forwarder in ${member} did not start`);
  }

  /** Drops every packet on the member's link, both ways: a silent partition. */
  cut(member) {
    if (this.cutOff.has(member)) return;
    for (const rule of dropRules()) iptables(this.namespace(member), '-I', ...rule);
    this.cutOff.add(member);
  }

  /** Takes a cut's rules out (a member not cut is left as it is). */
  heal(member) {
    if (!this.cutOff.delete(member)) return;
    for (const rule of dropRules()) iptables(this.namespace(member), '-D', ...rule);
  }

  /** Kills every process started in the namespaces and deletes them. */
  async remove() {
    const exits = [...this.children].map((child) => once(child, 'exit'));
    this.removeSync();
    await Promise.all(exits);
  }

  removeSync() {
    process.off('exit', this.removeNow);
    for (const signal of SIGNALS) process.off(signal, this.removeOnSignal);
    for (const server of this.servers) server.close();
    this.servers.clear();
    for (const child of this.children) child.kill('SIGKILL');
    for (const member of [...this.members, 'hub']) deleteNamespace(this.namespace(member));
    rmSync(this.dir, { recursive: true, force: true });
  }
}

/** The rules of a cut: everything in and out of the member's link to the bridge. */
function dropRules() {
  return [
    ['INPUT', '-i', 'eth0', '-j', 'DROP'],
    ['OUTPUT', '-o', 'eth0', '-j', 'DROP']
  ];
}

/** Namespaces a run that died left behind: its prefix, and a pid that is gone. */
function removeStale() {
  const names = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' })
    .split('\n')
    .map((line) => line.split(' ')[0]);
  for (const name of names) {
    const pid = new RegExp(`^${PREFIX}(\\d+)-`).exec(name)?.[1];
    if (pid !== undefined && !alive(Number(pid))) deleteNamespace(name);
  }
}

function deleteNamespace(name) {
  let pids = '';
  try {
    pids = execFileSync('ip', ['netns', 'pids', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    return; // not there
  }
  for (const pid of pids.split('\n').filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {}
  }
  try {
    execFileSync('ip', ['netns', 'del', name], { stdio: 'ignore' });
  } catch {}
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

function ip(...args) {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });
}

function iptables(namespace, ...args) {
  execFileSync('ip', ['netns', 'exec', namespace, 'iptables', '-w', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
}
