/**
 * The converted pages as images a browser shows, for a simulator started with
 * `serveFiles` (the demo, the example callers' tests): it then names its files
 * under its own `<url>/files` rather than the CDN that is never served, and
 * answers `GET /files/staticConvert/<uuid>/<page>.png` and
 * `GET /files/dynamicConvert/<uuid>/preview/<page>.png` with a real PNG of the
 * page's size, one colour per page. Anything else under /files is 404.
 */
import type http from "node:http";
import { crc32, deflateSync } from "node:zlib";
import { PAGE_HEIGHT, PAGE_WIDTH } from "./tasks.js";

export const FILES_PATH = "/files";

const PAGE_IMAGE = /^\/files\/(?:staticConvert\/[0-9a-f]+\/|dynamicConvert\/[0-9a-f]+\/preview\/)(\d{1,4})\.png$/;
const COLOURS: readonly (readonly [number, number, number])[] = [
  [70, 130, 180],
  [60, 179, 113],
  [218, 165, 32],
  [205, 92, 92],
];
/** One image per colour, made once. */
const made = new Map<number, Buffer>();

/** Answers a GET under /files: the page's PNG, or 404. */
export function servePageImage(path: string, res: http.ServerResponse): void {
  const page = PAGE_IMAGE.exec(path)?.[1];
  if (page === undefined) {
    res.writeHead(404, { "content-type": "application/json" }).end('{"message":"not found"}');
    return;
  }
  const colour = Number(page) % COLOURS.length;
  let png = made.get(colour);
  if (png === undefined) {
    png = solidPng(PAGE_WIDTH, PAGE_HEIGHT, COLOURS[colour] ?? [0, 0, 0]);
    made.set(colour, png);
  }
  res.writeHead(200, { "content-type": "image/png", "cache-control": "max-age=3600" }).end(png);
}

/** A `width` × `height` PNG (8-bit RGB, no filter) of one colour. */
function solidPng(width: number, height: number, rgb: readonly [number, number, number]): Buffer {
  const row = Buffer.alloc(1 + 3 * width); // filter byte 0, then the pixels
  for (let x = 0; x < width; x++) row.set(rgb, 1 + 3 * x);
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "latin1"), data]);
    const frame = Buffer.alloc(8 + data.length + 4);
    frame.writeUInt32BE(data.length, 0);
    body.copy(frame, 4);
    frame.writeUInt32BE(crc32(body), 8 + data.length);
    return frame;
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 2, 0, 0, 0], 8); // depth 8, RGB, deflate, no filter method, no interlace
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk("IHDR", header),
    chunk("IDAT", deflateSync(Buffer.concat(Array.from({ length: height }, () => row)))),
    chunk("IEND", Buffer.alloc(0)),
  ]);
}
