// Builders of PROXY protocol headers, and a ws client that sends one first,
// the way a TCP load balancer does.
import net from 'node:net';
import WebSocket from 'ws';
import { TestClient } from './client.js';

export function proxyV1(ip, port = 40000) {
  const family = net.isIPv6(ip) ? 'TCP6' : 'TCP4';
  const destination = family === 'TCP6' ? '::1' : '127.0.0.1';
  return Buffer.from(`PROXY ${family} ${ip} ${destination} ${port} 443\r\n`);
}

export function proxyV2(ip, { command = 1, tlv = Buffer.alloc(0) } = {}) {
  const signature = Buffer.from('0d0a0d0a000d0a515549540a', 'hex');
  const address = Buffer.alloc(12);
  ip.split('.').forEach((octet, i) => (address[i] = Number(octet)));
  address.writeUInt16BE(40000, 8);
  address.writeUInt16BE(443, 10);
  const head = Buffer.from([0x20 | command, 0x11, 0, 0]);
  head.writeUInt16BE(address.length + tlv.length, 2);
  return Buffer.concat([signature, head, address, tlv]);
}

/** A TestClient whose TCP stream starts with `header`. */
export function connectThroughProxy(url, header, options = {}) {
  return TestClient.connect(url, {
    ...options,
    createConnection: (opts) => {
      const socket = net.connect(opts);
      socket.write(header);
      return socket;
    }
  });
}

export { WebSocket };
