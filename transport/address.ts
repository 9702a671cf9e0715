/**
 * Listen and advertise addresses of a ws mesh. `listen` is where the socket binds; the endpoint published in the
 * descriptor (what peers dial) is `advertise` when given, else the listen address. An unspecified listen address
 * (0.0.0.0, ::) binds every interface but is nothing a peer can dial, so it is never published: such a mesh needs
 * `advertise`.
 */
import { isIPv4, isIPv6 } from 'node:net';

/** 0.0.0.0, ::, and their other spellings (0:0:…:0, [::]): "every interface", not an address a peer can dial. */
export function isUnspecifiedHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === '') return true;
  if (isIPv4(h)) return h.split('.').every((part) => Number(part) === 0);
  if (isIPv6(h)) return /^[0:]+$/.test(h);
  return false;
}

export function formatHost(host: string): string {
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}

/**
 * The endpoint URL peers dial for `advertise`: a `ws://` or `wss://` URL as given (normalized), or `host:port`
 * (`[v6]:port`) with the scheme of the listener; `host` alone takes `boundPort`. Throws TypeError with the rule.
 */
export function advertisedEndpoint(advertise: string, secure: boolean, boundPort: number): string {
  const value = advertise.trim();
  if (value === '') throw new TypeError('must be a host:port or a ws:// / wss:// URL peers can dial; got an empty string');
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    let url: URL;
    try {
      url = new URL(value);
    } catch {
      throw new TypeError(`must be a host:port or a ws:// / wss:// URL peers can dial; got '${advertise}'`);
    }
    if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
      throw new TypeError(`must use ws:// or wss:// (the mesh is WebSocket); got '${url.protocol}//' in '${advertise}'`);
    if (isUnspecifiedHost(url.hostname)) throw new TypeError(`must name an address peers can dial, not the unspecified address '${url.hostname}'`);
    return url.href;
  }
  const match = /^(\[[^\]]+\]|[^:[\]/\s]+)(?::(\d{1,5}))?$/.exec(value);
  if (!match) throw new TypeError(`must be a host:port (IPv6 in brackets: [::1]:7100) or a ws:// / wss:// URL; got '${advertise}'`);
  const host = match[1]!;
  const port = match[2] === undefined ? boundPort : Number(match[2]);
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new TypeError(`port must be 1–65535; got '${match[2]}' in '${advertise}'`);
  if (isUnspecifiedHost(host)) throw new TypeError(`must name an address peers can dial, not the unspecified address '${host}'`);
  return `${secure ? 'wss' : 'ws'}://${formatHost(host.replace(/^\[(.*)\]$/, '$1'))}:${port}/`;
}
