import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { checkUrl, classifyAddress, isAddressRefused, parseHostOverrides, resolveVetted, vettedLookup } from '../src';

const strict = { allowLoopback: false };
const dev = { allowLoopback: true };

/** The refusal corpus: every URL here must be refused before any connection, whatever its spelling. */
const refusedUrls: Array<[string, RegExp]> = [
  ['http://127.0.0.1/', /loopback/],
  ['http://127.1.2.3:8080/hook', /loopback/],
  ['http://10.0.0.1/', /private/],
  ['http://10.255.255.254/', /private/],
  ['http://172.16.0.1/', /private/],
  ['http://172.31.255.1/', /private/],
  ['http://192.168.1.1/', /private/],
  ['http://169.254.169.254/latest/meta-data/', /metadata/],
  ['http://169.254.1.1/', /link-local/],
  ['http://100.64.0.1/', /carrier-grade NAT/],
  ['http://100.100.100.200/', /metadata/],
  ['http://0.0.0.0/', /unspecified/],
  ['http://255.255.255.255/', /broadcast/],
  ['http://224.0.0.1/', /multicast/],
  ['http://[::1]/', /loopback/],
  ['http://[::]/', /unspecified/],
  ['http://[fc00::1]/', /unique-local/],
  ['http://[fd12:3456::1]/', /unique-local/],
  ['http://[fe80::1]/', /link-local/],
  ['http://[fd00:ec2::254]/', /metadata/],
  ['http://[::ffff:127.0.0.1]/', /IPv4-mapped/],
  ['http://[::ffff:10.0.0.1]/', /IPv4-mapped/],
  ['http://[::ffff:8.8.8.8]/', /IPv4-mapped/],
  ['http://[::127.0.0.1]/', /IPv4-compatible/],
  ['http://[64:ff9b::a00:1]/', /NAT64/],
  ['http://2130706433/', /loopback/],
  ['http://0177.0.0.1/', /loopback/],
  ['http://0x7f000001/', /loopback/],
  ['http://0x7f.0.0.1/', /loopback/],
  ['http://127.1/', /loopback/],
  ['http://017700000001/', /loopback/],
  ['http://167772161/', /private/],
  ['https://[0:0:0:0:0:ffff:7f00:1]:443/', /IPv4-mapped/],
];

describe('the address-safety decision', () => {
  test.each(refusedUrls)(
    'when the URL is %s and loopback is not allowed, then it is refused from the URL alone',
    (url, why) => {
      const v = checkUrl(url, strict);
      expect(v.kind).toBe('literal');
      if (v.kind !== 'literal') return;
      expect(v.verdict.allowed).toBe(false);
      if (!v.verdict.allowed) expect(v.verdict.reason).toMatch(why);
    },
  );

  test.each(['http://8.8.8.8/', 'https://1.1.1.1:8443/x', 'http://[2606:4700:4700::1111]/', 'http://93.184.216.34/'])(
    'when the URL is the public address %s, then it is allowed',
    (url) => {
      const v = checkUrl(url, strict);
      expect(v).toMatchObject({ kind: 'literal', verdict: { allowed: true } });
    },
  );

  test('when loopback is allowed for development, then loopback passes but private, link-local and mapped forms are still refused', () => {
    expect(classifyAddress('127.0.0.1', dev).allowed).toBe(true);
    expect(classifyAddress('::1', dev).allowed).toBe(true);
    for (const ip of [
      '10.0.0.1',
      '172.16.0.1',
      '192.168.0.1',
      '169.254.169.254',
      '100.64.0.1',
      'fc00::1',
      '::ffff:127.0.0.1',
      '0.0.0.0',
    ]) {
      expect(classifyAddress(ip, dev).allowed).toBe(false);
    }
  });

  test('when the URL names a host, then nothing is decided until it is resolved', () => {
    expect(checkUrl('https://hooks.example.com/x', strict)).toEqual({ kind: 'hostname', host: 'hooks.example.com' });
    expect(checkUrl('ftp://example.com/', strict).kind).toBe('invalid');
  });

  test('when a host name resolves to loopback (localhost), then resolution refuses it', async () => {
    await expect(resolveVetted('localhost', strict)).rejects.toThrow(/localhost resolves to .*loopback/);
  });

  test('when a host resolves to a mix of public and private addresses, then the whole host is refused', async () => {
    const resolve = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.1.2.3', family: 4 },
    ];
    await expect(resolveVetted('rebind.example', strict, { resolve })).rejects.toThrow(
      /rebind\.example resolves to a refused address: 10\.1\.2\.3 is a private address/,
    );
    await expect(
      resolveVetted('ok.example', strict, { resolve: async () => [{ address: '93.184.216.34', family: 4 }] }),
    ).resolves.toEqual([{ address: '93.184.216.34', family: 4 }]);
  });

  test('when a host override points at a private address, then it is refused like a DNS answer', async () => {
    const overrides = parseHostOverrides('internal.test=10.0.0.1, public.test=93.184.216.34');
    await expect(resolveVetted('internal.test', strict, { overrides })).rejects.toThrow(/private/);
    await expect(resolveVetted('PUBLIC.test', strict, { overrides })).resolves.toEqual([
      { address: '93.184.216.34', family: 4 },
    ]);
    expect(() => parseHostOverrides('bad')).toThrow(/host=ip/);
  });

  test('when a socket connects through the vetted lookup to localhost, then it fails before connecting and the listener sees nothing', async () => {
    let connections = 0;
    let seen: () => void = () => undefined;
    const server = net.createServer((s) => {
      connections++;
      seen();
      s.destroy();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      const err = await new Promise<Error>((resolve) => {
        const socket = net.connect({ host: 'localhost', port, lookup: vettedLookup(strict) as never });
        socket.once('connect', () => resolve(new Error('connected')));
        socket.once('error', resolve);
      });
      expect(isAddressRefused(err)).toBe(true);
      expect(err.message).toMatch(/loopback/);

      expect(connections).toBe(0);

      // the same lookup with loopback allowed connects, so the refusal above came from the policy
      const arrived = new Promise<void>((r) => (seen = r));
      await new Promise<void>((resolve, reject) => {
        const socket = net.connect({ host: 'localhost', port, lookup: vettedLookup(dev) as never });
        socket.once('connect', () => {
          socket.destroy();
          resolve();
        });
        socket.once('error', reject);
      });
      await arrived;
      expect(connections).toBe(1);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });
});
