/** Reading a server's `/metrics`: one series' value, by name and (some of) its labels. */
import { h1 } from "./http-clients.js";

/** The exposition text of `url`'s `/metrics`. */
export async function scrape(url: string): Promise<string> {
  return (await h1(url, "/metrics")).body;
}

/**
 * The value of the series `name` whose labels include `labels`, in `text`
 * (summed when several match); 0 when none does.
 */
export function seriesValue(text: string, name: string, labels: Record<string, string> = {}): number {
  const wanted = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!(line.startsWith(`${name}{`) || line.startsWith(`${name} `))) continue;
    const labelText = line.startsWith(`${name}{`) ? line.slice(name.length + 1, line.lastIndexOf("}")) : "";
    const have = labelText === "" ? [] : labelText.split(/,(?=[a-z_]+=")/);
    if (wanted.every((w) => have.includes(w))) sum += Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return sum;
}

/** `seriesValue` of a fresh scrape of `url`. */
export async function readSeries(url: string, name: string, labels: Record<string, string> = {}): Promise<number> {
  return seriesValue(await scrape(url), name, labels);
}
