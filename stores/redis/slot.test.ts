import { hashSlot } from './slot';

test('hash slots follow the Redis Cluster spec (CRC16/XMODEM of the hash tag)', () => {
  expect(hashSlot('{123456789}')).toBe(0x31c3); // the spec's check value
  expect(hashSlot('p:{user1000}.following')).toBe(hashSlot('x{user1000}:op:1'));
});
