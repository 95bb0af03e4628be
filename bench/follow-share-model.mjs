/**
 * A model of instances sharing one due index (src/services/conversion/follower.ts), to choose how often
 * a follower looks: `node bench/follow-share-model.mjs`. No servers; a second or two of CPU.
 *
 * Tasks come due evenly (RATE a second; each is due again PERIOD s after the look that took it). Each
 * instance looks at a random point of [½, 1½] × its mean tick after its last look, and a look takes
 * everything due (the real follower chains batches as fast as polls end, so a look drains what is due
 * within milliseconds). The mean tick is `idleS`, or `busyS` while one of the instance's looks in the
 * last `holdS` seconds found tasks. Printed per setting: the worst instance's distance from an even
 * share over a WINDOW_S window (median and p90 of RUNS runs) and how often it is over 10 points, the
 * issue's bound.
 */
const RATE = 2_000;
const PERIOD = 5;
const WARM_S = 10;
const WINDOW_S = 20;
const INSTANCES = 3;
const RUNS = Number(process.env.MODEL_RUNS ?? 40);

/** A binary min-heap of [time, value]. */
class Heap {
  items = [];
  push(t, v) {
    const a = this.items;
    a.push([t, v]);
    for (let i = a.length - 1; i > 0; ) {
      const p = (i - 1) >> 1;
      if (a[p][0] <= a[i][0]) break;
      [a[p], a[i]] = [a[i], a[p]];
      i = p;
    }
  }
  peek() {
    return this.items[0];
  }
  pop() {
    const a = this.items;
    const top = a[0];
    const last = a.pop();
    if (a.length > 0) {
      a[0] = last;
      for (let i = 0; ; ) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < a.length && a[l][0] < a[m][0]) m = l;
        if (r < a.length && a[r][0] < a[m][0]) m = r;
        if (m === i) break;
        [a[m], a[i]] = [a[i], a[m]];
        i = m;
      }
    }
    return top;
  }
}

function shares({ idleS, busyS, holdS }) {
  const due = new Heap();
  for (let i = 0; i < RATE * PERIOD; i++) due.push(Math.random() * PERIOD, 0);
  const looks = new Heap();
  for (let i = 0; i < INSTANCES; i++) looks.push(Math.random() * idleS, i);
  const lastFound = Array(INSTANCES).fill(Number.NEGATIVE_INFINITY);
  const taken = Array(INSTANCES).fill(0);
  for (;;) {
    const [t, i] = looks.pop();
    if (t > WARM_S + WINDOW_S) break;
    let n = 0;
    while (due.items.length > 0 && due.peek()[0] <= t) {
      due.pop();
      n++;
    }
    for (let k = 0; k < n; k++) due.push(t + PERIOD, 0);
    if (n > 0) lastFound[i] = t;
    if (t >= WARM_S) taken[i] += n;
    const busy = busyS !== undefined && t - lastFound[i] <= holdS;
    looks.push(t + (busy ? busyS : idleS) * (0.5 + Math.random()), i);
  }
  const all = taken.reduce((a, b) => a + b, 0);
  return taken.map((x) => x / all);
}

const SETTINGS = [
  { name: "one tick of 0.5 s (before)", idleS: 0.5 },
  { name: "0.1 s while the last look found tasks", idleS: 0.5, busyS: 0.1, holdS: 0 },
  { name: "0.1 s, held 2.5 s after the last find", idleS: 0.5, busyS: 0.1, holdS: 2.5 },
  { name: "0.05 s, held 2.5 s (the follower's)", idleS: 0.5, busyS: 0.05, holdS: 2.5 },
  { name: "one tick of 0.1 s", idleS: 0.1 },
];
for (const s of SETTINGS) {
  const worst = [];
  for (let r = 0; r < RUNS; r++) worst.push(Math.max(...shares(s).map((x) => Math.abs(x - 1 / INSTANCES))));
  worst.sort((a, b) => a - b);
  const at = (q) => (100 * (worst[Math.floor(q * (RUNS - 1))] ?? Number.NaN)).toFixed(1);
  const over = (100 * worst.filter((w) => w > 0.1).length) / RUNS;
  console.log(
    `${s.name}: worst share off by ${at(0.5)} points (median), ${at(0.9)} (p90); over 10 points in ${over.toFixed(0)} % of ${RUNS} runs`,
  );
}
