import { startConversionSimulator } from "./boardline.mjs";
/**
 * The conversion simulator of the watchers scenario, in a process of its own
 * (bench/scenarios/conversion-watchers.mjs forks it), so its answers to boardline's follower are
 * not held up by the watchers' own work in the parent. Over the IPC channel:
 *
 *   → parent  { ready: url }                          once listening
 *   ← parent  { id, ask: "tasks" }
 *   → parent  { id, tasks: [{ uuid, endsAt, status }] }
 *
 * `endsAt` is the simulator's own schedule (SimulatedTask.endsAt): the first
 * instant a query is answered with the task's terminal state. The process ends
 * when the parent disconnects (or dies) or on SIGTERM.
 *
 * Environment: SIM_SDK_TOKEN (the token boardline presents), SIM_PROGRESS_MS.
 */

const token = process.env.SIM_SDK_TOKEN;
const progressMs = Number(process.env.SIM_PROGRESS_MS ?? 1500);
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
  credentials: { sdkTokens: [token] },
});

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
  if (message?.ask !== "tasks") return;
  const tasks = simulator.tasks().map((t) => ({ uuid: t.uuid, endsAt: t.endsAt, status: t.state.status }));
  process.send?.({ id: message.id, tasks });
});
process.send({ ready: simulator.url });
