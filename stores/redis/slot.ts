/**
 * Redis Cluster hash slot of a key (CRC16/XMODEM of its hash tag, mod 16384), so casMany can send one script
 * call per slot group and the layout stays valid on a cluster.
 */
import { hashTag } from './keys';

const TABLE = new Uint16Array(256).map((_, byte) => {
  let crc = byte << 8;
  for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? (crc << 1) ^ 0x1021 : crc << 1;
  return crc & 0xffff;
});

export function hashSlot(key: string): number {
  const tag = hashTag(key).slice(1, -1);
  let crc = 0;
  for (const byte of Buffer.from(tag)) crc = ((crc << 8) ^ TABLE[((crc >> 8) ^ byte) & 0xff]!) & 0xffff;
  return crc % 16384;
}
