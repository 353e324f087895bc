// Issue 30.12: IPv4-compatible IPv6 addresses (`::a.b.c.d`, ::/96) passed the address rules that
// webhooks and token metadata share (src/net/targets.ts): ipaddr.js calls them unicast.
import { describe, expect, it } from 'vitest';
import { addressAllowed, targetUrlProblem } from '../../../src/net/targets.ts';

const STRICT = { allowLoopback: false, allowedNetworks: [] };
const LOOPBACK_ALLOWED = { allowLoopback: true, allowedNetworks: [] };

describe('30.12: IPv4-compatible IPv6 addresses', () => {
  it.each([
    ['::127.0.0.1', 'loopback'],
    ['::7f00:1', 'loopback, hexadecimal'],
    ['::10.1.2.3', 'private'],
    ['::169.254.169.254', 'cloud metadata'],
    ['::93.184.216.34', 'public IPv4'],
    ['::2', 'the first of ::/96 after ::1'],
  ])('30.12: refuses %s (%s), also where loopback is allowed', (address) => {
    expect(addressAllowed(address, STRICT)).toBe(false);
    expect(addressAllowed(address, LOOPBACK_ALLOWED)).toBe(false);
  });

  it('30.12: refuses them in webhook and metadata URLs', () => {
    for (const url of ['https://[::127.0.0.1]/x', 'https://[::a9fe:a9fe]/x', 'http://[::127.0.0.1]/x']) {
      expect([url, targetUrlProblem(url, STRICT)]).toEqual([url, expect.any(String)]);
      expect([url, targetUrlProblem(url, LOOPBACK_ALLOWED)]).toEqual([url, expect.any(String)]);
    }
  });

  it('30.12: still allows ::1 as loopback when configured, public IPv6, and listed networks', () => {
    expect(addressAllowed('::1', LOOPBACK_ALLOWED)).toBe(true);
    expect(addressAllowed('2606:4700:4700::1111', STRICT)).toBe(true);
    expect(addressAllowed('::10.1.2.3', { allowLoopback: false, allowedNetworks: ['::a01:0/112'] })).toBe(
      true,
    );
  });
});
