// Where the service may send requests to addresses it is given (SSRF): webhook deliveries
// (src/webhooks/) and on-chain token metadata (src/chain/metadata.ts). A URL is checked when it is
// accepted (https, or http on a loopback host when the policy allows loopback; no credentials, no
// fragment), and its host is resolved again at every request: every address it resolves to must be public unicast (ipaddr.js
// classifies the private, loopback, link-local, carrier-grade NAT, multicast, reserved ... ranges;
// the cloud metadata address 169.254.169.254 is link-local) or inside the policy's allowed networks
// (WEBHOOK_ALLOWED_NETWORKS, CHAIN_METADATA_ALLOWED_NETWORKS).
// The request then connects to the address that was checked, never resolving the name a second time,
// so a DNS answer that changes between the check and the connection (DNS rebinding) cannot steer it.
import { lookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface TargetPolicy {
  allowLoopback: boolean;
  /** CIDR ranges allowed although not public. */
  allowedNetworks: string[];
}

/** Every address a host name resolves to (the system resolver; tests pass their own). */
export type Resolver = (host: string) => Promise<{ address: string; family: number }[]>;

const systemResolver: Resolver = (host) => lookup(host, { all: true, verbatim: true });

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

export class TargetRefusedError extends Error {
  override name = 'TargetRefusedError';
}

/** What is wrong with a URL the service is asked to call (a webhook, a token's metadata), or null. */
export function targetUrlProblem(value: string, policy: TargetPolicy): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.username || url.password) return 'must not contain credentials';
  if (url.hash || value.includes('#')) return 'must not contain a fragment';
  if (url.protocol === 'http:') {
    if (!policy.allowLoopback || !LOOPBACK_HOSTS.has(url.hostname))
      return 'must use https (plain http only on a loopback host, when the service allows it for development)';
  } else if (url.protocol !== 'https:') {
    return 'must use https';
  }
  const host = url.hostname.replace(/^\[|\]$/g, '');
  if (isIP(host) && !addressAllowed(host, policy)) return 'must not point at a private or reserved address';
  return null;
}

function parseNetworks(networks: string[]): [ipaddr.IPv4 | ipaddr.IPv6, number][] {
  return networks.map((cidr) => ipaddr.parseCIDR(cidr));
}

/**
 * An IPv4-compatible IPv6 address (`::a.b.c.d`, ::/96 beside `::` and `::1`; deprecated by RFC 4291
 * §2.5.5.1): ipaddr.js calls it unicast, but it carries an IPv4 address (30.12: `[::127.0.0.1]`
 * passed the rules). Refused whatever it embeds, unless an allowed network lists it.
 */
function ipv4Compatible(address: ipaddr.IPv4 | ipaddr.IPv6): boolean {
  if (address.kind() !== 'ipv6') return false;
  const parts = (address as ipaddr.IPv6).parts;
  return parts.slice(0, 6).every((part) => part === 0) && (parts[6] !== 0 || parts[7] > 1);
}

/**
 * An IPv6 address as the WHATWG URL parser writes it (hexadecimal, compressed): ipaddr.js reads a
 * dotted tail such as `::127.0.0.1` as IPv4-mapped (`::ffff:127.0.0.1`), which it is not.
 */
function canonical(address: string): string {
  if (isIP(address) !== 6) return address;
  try {
    return new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return address;
  }
}

/** Whether the service may connect to `address`. */
export function addressAllowed(address: string, policy: TargetPolicy): boolean {
  let parsed = ipaddr.parse(canonical(address));
  if (parsed.kind() === 'ipv6' && (parsed as ipaddr.IPv6).isIPv4MappedAddress())
    parsed = (parsed as ipaddr.IPv6).toIPv4Address();
  const range = ipv4Compatible(parsed) ? 'ipv4Compatible' : parsed.range();
  if (range === 'unicast') return true;
  if (range === 'loopback' && policy.allowLoopback) return true;
  return parseNetworks(policy.allowedNetworks).some(
    ([network, bits]) => network.kind() === parsed.kind() && parsed.match(network, bits),
  );
}

/**
 * Resolves the URL's host once and checks every address it has (an attacker's name may list a
 * public address beside a private one); returns the address to connect to.
 */
export async function resolveTarget(
  url: URL,
  policy: TargetPolicy & { resolve?: Resolver },
): Promise<{ address: string; family: number }> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const resolve = policy.resolve ?? systemResolver;
  const addresses = isIP(host)
    ? [{ address: host, family: isIP(host) }]
    : await resolve(host).catch(() => {
        throw new TargetRefusedError(`the host ${host} does not resolve`);
      });
  if (addresses.length === 0) throw new TargetRefusedError(`the host ${host} does not resolve`);
  const refused = addresses.find(({ address }) => !addressAllowed(address, policy));
  if (refused)
    throw new TargetRefusedError(`the host ${host} resolves to a refused address (${refused.address})`);
  return addresses[0];
}

/**
 * A `lookup` for http(s).request that answers only the address `resolveTarget` checked: the
 * connection goes there (the Host header and TLS name stay the URL's host), never to a second answer.
 */
export function pinnedLookup(pinned: { address: string; family: number }): LookupFunction {
  return (_host, lookupOptions, callback) => {
    if ((lookupOptions as { all?: boolean }).all)
      (callback as unknown as (e: null, a: { address: string; family: number }[]) => void)(null, [pinned]);
    else callback(null, pinned.address, pinned.family);
  };
}
