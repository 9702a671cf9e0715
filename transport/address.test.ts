import { advertisedEndpoint, isUnspecifiedHost } from './address';

describe('isUnspecifiedHost', () => {
  test.each(['0.0.0.0', '::', '[::]', '::0', '0:0:0:0:0:0:0:0', ' 0.0.0.0 ', ''])('%j is unspecified', (host) => {
    expect(isUnspecifiedHost(host)).toBe(true);
  });
  test.each(['127.0.0.1', '10.0.0.5', '::1', '[::1]', 'fd00::5', 'localhost', 'node-a.internal', '0.0.0.1'])('%j is an address peers can dial', (host) => {
    expect(isUnspecifiedHost(host)).toBe(false);
  });
});

describe('advertisedEndpoint', () => {
  test.each([
    ['10.0.0.5:7100', false, 'ws://10.0.0.5:7100/'],
    ['10.0.0.5:7100', true, 'wss://10.0.0.5:7100/'],
    ['node-a.internal', false, 'ws://node-a.internal:43210/'],
    ['[fd00::5]:7100', false, 'ws://[fd00::5]:7100/'],
    ['[fd00::5]', false, 'ws://[fd00::5]:43210/'],
    ['ws://10.0.0.5:7100', false, 'ws://10.0.0.5:7100/'],
    ['wss://mesh.example.com/zlink', false, 'wss://mesh.example.com/zlink'],
  ])('%s (tls %s) → %s', (advertise, secure, endpoint) => {
    expect(advertisedEndpoint(advertise, secure, 43210)).toBe(endpoint);
  });

  test.each([
    ['', /empty/],
    ['0.0.0.0:7100', /unspecified address/],
    ['[::]:7100', /unspecified address/],
    ['ws://0.0.0.0:7100', /unspecified address/],
    ['http://10.0.0.5:7100', /ws:\/\/ or wss:\/\//],
    ['10.0.0.5:0', /port must be 1–65535/],
    ['10.0.0.5:99999', /port must be 1–65535/],
    ['fd00::5:7100', /IPv6 in brackets/],
    ['a b:1', /host:port/],
  ])('%j is refused (%s)', (advertise, rule) => {
    expect(() => advertisedEndpoint(advertise, false, 1)).toThrow(rule);
  });
});
