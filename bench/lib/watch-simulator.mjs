import { startConversionSimulator } from "./boardline.mjs";
/**
 * The conversion simulator of the watchers scenario, in a process of its own
 * (bench/scenarios/conversion-watchers.mjs forks it; so do follow-setup.mjs and
 * bench/scenarios/conversion-queue.mjs), so its answers to boardline are not held up by the
 * bench's own work in the parent. Over the IPC channel:
 *
 *   → parent  { ready: url }                          once listening
 *   ← parent  { id, ask: "tasks" }
 *   → parent  { id, tasks: [{ uuid, endsAt, status }] }
 *   ← parent  { id, ask: "creates" }
 *   → parent  { id, creates: [{ at, resource, uuid }], refused }   every create it accepted, in order, and
 *                                                                   how many the creates limit refused
 *
 * `endsAt` is the simulator's own schedule (SimulatedTask.endsAt): the first
 * instant a query is answered with the task's terminal state. The process ends
 * when the parent disconnects (or dies) or on SIGTERM.
 *
 * Environment: SIM_SDK_TOKEN (the token boardline presents), SIM_PROGRESS_MS, SIM_CREATES_PER_SECOND
 * (the backend's creates a second per project; absent or 0: no limit), SIM_CREATE_DELAY_MS (each create
 * made when it arrives, its answer sent this much later, as a distant backend's; absent or 0: at once).
 */

const token = process.env.SIM_SDK_TOKEN;
const progressMs = Number(process.env.SIM_PROGRESS_MS ?? 1500);
const createsPerSecond = Number(process.env.SIM_CREATES_PER_SECOND || 0);
const createDelayMs = Number(process.env.SIM_CREATE_DELAY_MS || 0);
if (!token || !(progressMs > 0) || typeof process.send !== "function") {
  console.error(
    "watch-simulator.mjs is forked by bench/scenarios/conversion-watchers.mjs with SIM_SDK_TOKEN and SIM_PROGRESS_MS",
  );
  process.exit(2);
}

const simulator = await startConversionSimulator({
  host: "127.0.0.1",
  port: 0,
  progressMs,
  pageCount: 3,
  createsPerSecond: createsPerSecond > 0 ? createsPerSecond : Number.POSITIVE_INFINITY,
  credentials: { sdkTokens: [token] },
});

if (createDelayMs > 0) simulator.setFault({ kind: "slow", delayMs: createDelayMs, operation: "create" });

let closing = false;
const stop = () => {
  if (closing) return;
  closing = true;
  void simulator.close().then(() => process.exit(0));
};
process.on("disconnect", stop);
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
process.on("message", (/** @type {{ ask?: string, id?: number }} */ message) => {
  if (message?.ask === "creates") {
    const creates = simulator.creates().map((c) => ({ at: c.at, resource: c.resource, uuid: c.uuid }));
    process.send?.({ id: message.id, creates, refused: simulator.refusedCreates() });
    return;
  }
  if (message?.ask !== "tasks") return;
  const tasks = simulator.tasks().map((t) => ({ uuid: t.uuid, endsAt: t.endsAt, status: t.state.status }));
  process.send?.({ id: message.id, tasks });
});
process.send({ ready: simulator.url });
