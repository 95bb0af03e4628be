/**
 * The routes the simulator serves: those of the Netless legacy
 * (legacy-routes.ts) and projector (projector-routes.ts) file-conversion APIs.
 * Every route is behind the same fault, token and region checks (see
 * `request-handler.ts`); a new API adds its entries to `SIMULATOR_ROUTES`.
 */
import { LEGACY_ROUTES } from "./legacy-routes.js";
import { PROJECTOR_ROUTES } from "./projector-routes.js";
import type { Route } from "./router.js";

export const SIMULATOR_ROUTES: readonly Route[] = [...LEGACY_ROUTES, ...PROJECTOR_ROUTES];
