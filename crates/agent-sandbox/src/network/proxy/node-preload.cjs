// Loaded by every Node.js process of an allow-list session (NODE_OPTIONS=--require <this>).
// Node 20's built-in fetch ignores HTTP(S)_PROXY and NODE_USE_ENV_PROXY, and commands have no
// other way out of the session's network namespace than the session proxy. This replaces the
// global dispatcher of Node's bundled undici with an Agent of the same class whose connections
// are CONNECT tunnels through the proxy; TLS runs end to end inside the tunnel.
'use strict';
(() => {
  const proxy = process.env.AGENT_NETWORK_PROXY;
  if (!proxy || typeof globalThis.fetch !== 'function') return;
  const slot = Symbol.for('undici.globalDispatcher.1');
  // The first call loads the bundled undici, which installs its default Agent in the slot; a
  // data: URL needs no connection.
  try {
    globalThis.fetch('data:,').catch(() => {});
  } catch {}
  const current = globalThis[slot];
  if (!current || typeof current.constructor !== 'function') return;
  const net = require('net');
  const tls = require('tls');
  const { hostname: proxyHost, port: proxyPort } = new URL(proxy);
  const noProxy = (process.env.NO_PROXY || process.env.no_proxy || '')
    .split(',').map((s) => s.trim().replace(/^\*?\./, '')).filter(Boolean);
  const bypass = (host) => noProxy.some((p) => host === p || host.endsWith('.' + p));

  function secure(socket, host, servername, callback) {
    const options = { socket, ALPNProtocols: ['http/1.1'] };
    if (!net.isIP(host)) options.servername = servername || host;
    const wrapped = tls.connect(options);
    wrapped.once('secureConnect', () => callback(null, wrapped));
    wrapped.once('error', (err) => callback(err, null));
  }

  function connect(opts, callback) {
    const https = opts.protocol === 'https:';
    const host = String(opts.hostname).replace(/^\[|\]$/g, '');
    const port = Number(opts.port) || (https ? 443 : 80);
    if (bypass(host)) {
      const socket = net.connect(port, host);
      socket.once('error', (err) => callback(err, null));
      socket.once('connect', () => (https ? secure(socket, host, opts.servername, callback) : callback(null, socket)));
      return;
    }
    const authority = net.isIPv6(host) ? `[${host}]:${port}` : `${host}:${port}`;
    const socket = net.connect(Number(proxyPort), proxyHost);
    socket.once('error', (err) => callback(err, null));
    socket.once('connect', () => socket.write(`CONNECT ${authority} HTTP/1.1\r\nHost: ${authority}\r\n\r\n`));
    let head = Buffer.alloc(0);
    const onData = (chunk) => {
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      socket.removeListener('data', onData);
      const status = head.subarray(0, end).toString().split(' ')[1];
      if (status !== '200') {
        const reason = head.subarray(end + 4).toString().trim() || `the proxy answered ${status}`;
        socket.destroy();
        callback(new Error(reason), null);
        return;
      }
      if (https) secure(socket, host, opts.servername, callback);
      else callback(null, socket);
    };
    socket.on('data', onData);
  }

  globalThis[slot] = new current.constructor({ connect });
})();
