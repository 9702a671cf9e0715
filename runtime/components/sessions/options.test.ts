/** `createRuntime({ sessions })` is validated strictly before anything starts: the error names the field. */
import { ArgumentError } from '../../errors';
import { parseRuntimeOptions } from '../../options';
import { memoryStores } from '../../../stores/memory/memory-stores';
import { decodeClientMessage, decodeServerMessage, encodeWire } from './wire';

const base = { nodeId: 'n', applicationVersion: 1, stores: memoryStores() };
const refusal = (sessions: unknown): ArgumentError => {
  try {
    parseRuntimeOptions({ ...base, sessions });
  } catch (error) {
    expect(error).toBeInstanceOf(ArgumentError);
    return error as ArgumentError;
  }
  throw new Error('accepted');
};

test('sessions options: listen is required and strict, advertise follows the mesh rules, authenticate is a function', () => {
  expect(parseRuntimeOptions({ ...base, sessions: { listen: { host: '127.0.0.1', port: 0 } } }).sessions).toEqual({ listen: { host: '127.0.0.1', port: 0 } });
  expect(refusal({}).field).toBe('sessions.listen');
  expect(refusal({ listen: { host: '127.0.0.1', port: 70000 } }).field).toBe('sessions.listen.port');
  expect(refusal({ listen: { host: '127.0.0.1', port: 0, tls: true } }).message).toMatch(/sessions\.listen\.tls: is not an option here \(known: host, port\)/);
  expect(refusal({ listen: { host: '127.0.0.1', port: 0 }, resumeWindow: 5 }).message).toMatch(/did you mean 'resumeWindowMs'/);
  expect(refusal({ listen: { host: '0.0.0.0', port: 7200 } })).toMatchObject({ field: 'sessions.advertise', message: expect.stringMatching(/required when sessions\.listen\.host is '0\.0\.0\.0'/) });
  expect(parseRuntimeOptions({ ...base, sessions: { listen: { host: '0.0.0.0', port: 7200 }, advertise: '10.0.0.5:7200' } }).sessions?.advertise).toBe('10.0.0.5:7200');
  expect(refusal({ listen: { host: '127.0.0.1', port: 0 }, advertise: 'http://x:1' }).field).toBe('sessions.advertise');
  expect(refusal({ listen: { host: '127.0.0.1', port: 0 }, authenticate: 'yes' }).field).toBe('sessions.authenticate');
  expect(refusal({ listen: { host: '127.0.0.1', port: 0 }, resumeWindowMs: 0 }).field).toBe('sessions.resumeWindowMs');
});

test('the client wire refuses anything that is not one of its messages (untrusted input)', () => {
  const bytes = (v: unknown) => encodeWire(v as never);
  expect(decodeClientMessage(bytes({ t: 'f', s: 1, d: new Uint8Array([1]) }))).toMatchObject({ t: 'f', s: 1 });
  for (const bad of [
    { t: 'f', s: 0, d: new Uint8Array([1]) },
    { t: 'f', s: 1.5, d: new Uint8Array([1]) },
    { t: 'f', s: 1, d: 'text' },
    { t: 'open', v: 1, actor: '' },
    { t: 'resume', v: 1, sid: 's', actor: 'a', gen: 1, attach: 1, down: 0 },
    { t: 'a', d: -1 },
    { t: 'nope' },
    [1, 2],
  ])
    expect(decodeClientMessage(bytes(bad))).toBeUndefined();
  expect(decodeClientMessage(new Uint8Array([0xc1]))).toBeUndefined();
  expect(decodeServerMessage(bytes({ t: 'closed', code: 'admission', reason: 'r', endpoints: ['ws://a/'] }))).toMatchObject({ code: 'admission' });
  expect(decodeServerMessage(bytes({ t: 'closed', code: 'whatever', reason: 'r' }))).toBeUndefined();
  expect(decodeServerMessage(bytes({ t: 'move', endpoints: [1] }))).toBeUndefined();
});
