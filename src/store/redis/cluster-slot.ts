/**
 * The Redis Cluster slot of a key or shard channel: CRC16 (XMODEM) of its
 * hash tag — the text between the first `{` and the next `}` when that is not
 * empty — else of the whole name, modulo 16 384 (the Redis Cluster
 * specification). The sharded subscriber needs it to know which master a
 * channel's notifications come from.
 */

const TABLE = crc16Table();

export function clusterSlot(name: string): number {
  const bytes = Buffer.from(hashTag(name), "utf8");
  let crc = 0;
  for (const byte of bytes) crc = ((crc << 8) & 0xffff) ^ (TABLE[((crc >> 8) ^ byte) & 0xff] as number);
  return crc % 16_384;
}

function hashTag(name: string): string {
  const open = name.indexOf("{");
  if (open === -1) return name;
  const close = name.indexOf("}", open + 1);
  if (close === -1 || close === open + 1) return name;
  return name.slice(open + 1, close);
}

function crc16Table(): Uint16Array {
  const table = new Uint16Array(256);
  for (let i = 0; i < 256; i++) {
    let crc = i << 8;
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
    table[i] = crc;
  }
  return table;
}
