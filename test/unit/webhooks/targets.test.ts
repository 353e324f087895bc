// Where webhooks may go (src/webhooks/targets.ts, sender.ts): the IPv6 forms of private, loopback,
// link-local and metadata addresses are refused like their IPv4 forms, an allowed network lets its
// addresses through, and a name is resolved once per delivery, checked, and connected to at the
// address that was checked (so a name that resolves to a public address, then to a private one, as a
// rebinding DNS server answers, is refused the second time and never reached).
import { createServer, type Server } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPools, sendWebhook } from '../../../src/webhooks/sender.ts';
import {
  addressAllowed,
  type Resolver,
  resolveTarget,
  TargetRefusedError,
  webhookUrlProblem,
} from '../../../src/webhooks/targets.ts';

const STRICT = { allowLoopback: false, allowedNetworks: [] };

describe('webhook target addresses', () => {
  it.each([
    ['::1', 'IPv6 loopback'],
    ['::', 'unspecified'],
    ['fc00::1', 'unique local (fc00::/7)'],
    ['fd12:3456:789a::1', 'unique local (fc00::/7)'],
    ['fd00:ec2::254', 'AWS instance metadata over IPv6 (unique local)'],
    ['fe80::1', 'link-local (fe80::/10)'],
    ['febf:ffff::1', 'link-local, top of fe80::/10'],
    ['ff02::1', 'multicast'],
    ['::ffff:127.0.0.1', 'IPv4-mapped loopback'],
    ['::ffff:7f00:1', 'IPv4-mapped loopback, hexadecimal'],
    ['::ffff:10.1.2.3', 'IPv4-mapped private'],
    ['::ffff:169.254.169.254', 'IPv4-mapped metadata'],
    ['64:ff9b::a01:203', 'NAT64 (64:ff9b::/96) of 10.1.2.3'],
    ['64:ff9b::7f00:1', 'NAT64 of 127.0.0.1'],
    ['64:ff9b::a9fe:a9fe', 'NAT64 of 169.254.169.254'],
    ['2002:7f00:1::1', '6to4 of 127.0.0.1'],
    ['2001:db8::1', 'documentation range'],
    ['169.254.169.254', 'cloud metadata (link-local)'],
    ['100.100.100.200', 'Alibaba metadata (carrier-grade NAT 100.64.0.0/10)'],
    ['127.0.0.1', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['192.168.1.1', 'private'],
    ['0.0.0.0', 'unspecified'],
  ])('refuses %s (%s)', (address) => {
    expect(addressAllowed(address, STRICT)).toBe(false);
  });

  it.each(['2606:4700:4700::1111', '2a00:1450:4001:82b::200e', '93.184.216.34', '::ffff:93.184.216.34'])(
    'allows the public unicast address %s',
    (address) => {
      expect(addressAllowed(address, STRICT)).toBe(true);
    },
  );

  it('allows loopback only when configured, and listed networks of the same family', () => {
    expect(addressAllowed('::1', { allowLoopback: true, allowedNetworks: [] })).toBe(true);
    expect(addressAllowed('::ffff:127.0.0.1', { allowLoopback: true, allowedNetworks: [] })).toBe(true);
    expect(addressAllowed('fe80::1', { allowLoopback: true, allowedNetworks: [] })).toBe(false);
    const networks = { allowLoopback: false, allowedNetworks: ['fd00::/8', '10.1.0.0/16'] };
    expect(addressAllowed('fd12::5', networks)).toBe(true);
    expect(addressAllowed('fc00::5', networks)).toBe(false);
    expect(addressAllowed('10.1.2.3', networks)).toBe(true);
    expect(addressAllowed('::ffff:10.1.2.3', networks)).toBe(true);
    expect(addressAllowed('10.2.0.1', networks)).toBe(false);
  });

  it('refuses subscription URLs with private IPv6 literals or a zone id', () => {
    for (const url of [
      'https://[::1]/x',
      'https://[fc00::1]/x',
      'https://[fe80::1]/x',
      'https://[fe80::1%25eth0]/x',
      'https://[::ffff:127.0.0.1]/x',
      'https://[::ffff:a9fe:a9fe]/x',
      'https://[64:ff9b::a01:203]/x',
    ]) {
      expect([url, webhookUrlProblem(url, STRICT)]).toEqual([url, expect.any(String)]);
    }
    expect(webhookUrlProblem('https://[2606:4700:4700::1111]/x', STRICT)).toBeNull();
  });

  it('refuses a name when any of its addresses is refused', async () => {
    const resolve: Resolver = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: 'fd00::1', family: 6 },
    ];
    await expect(
      resolveTarget(new URL('https://hooks.example.com/x'), { ...STRICT, resolve }),
    ).rejects.toThrow(TargetRefusedError);
    const unresolvable: Resolver = async () => {
      throw new Error('ENOTFOUND');
    };
    await expect(
      resolveTarget(new URL('https://nowhere.example.com/x'), { ...STRICT, resolve: unresolvable }),
    ).rejects.toThrow(/does not resolve/);
  });
});

describe('DNS rebinding', () => {
  let server: Server;
  let port: number;
  const hosts: string[] = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      hosts.push(String(req.headers.host));
      req.resume();
      req.on('end', () => res.writeHead(204).end());
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as { port: number }).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  });

  it('connects to the address it checked, and refuses the name once it resolves to a refused one', async () => {
    // The name does not exist: only the resolver the sender checks with knows it. Its first answer
    // is allowed here (loopback, allowed for the test's receiver); its second is a private address.
    const answers = [[{ address: '127.0.0.1', family: 4 }], [{ address: '10.20.30.40', family: 4 }]];
    let asked = 0;
    const resolve: Resolver = async () => answers[Math.min(asked++, answers.length - 1)];
    const pools = createPools();
    const options = {
      allowLoopback: true,
      allowedNetworks: [],
      timeoutMs: 2000,
      userAgent: 'test',
      pools,
      resolve,
    };
    const message = {
      id: 'whd_01JD4C5Q6R7S8T9V0W1X2Y3Z4A',
      body: '{}',
      secrets: [`whsec_${Buffer.alloc(32, 7).toString('base64')}`],
    };
    try {
      const url = `http://rebind.invalid:${port}/hooks`;
      const first = await sendWebhook(url, message, options);
      // Delivered to the checked address (a second lookup of the name would have failed: it does not exist).
      expect(first).toEqual({ ok: true, statusCode: 204, error: null });
      expect(hosts).toEqual([`rebind.invalid:${port}`]);
      const second = await sendWebhook(url, message, options);
      expect(second.ok).toBe(false);
      expect(second.error).toMatch(/refused address \(10\.20\.30\.40\)/);
      expect(hosts).toHaveLength(1);
      expect(asked).toBe(2);
    } finally {
      pools.close();
    }
  });
});
