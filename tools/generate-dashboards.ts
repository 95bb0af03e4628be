// `npm run dashboards` (and `npm run generate`): rewrites deploy/monitoring/dashboards/overview.json
// from tools/dashboards.ts, and the Kubernetes monitoring component's files made from it and from
// the alert rules (tools/monitoring-manifests.ts). Runs compiled, as dist/tools/generate-dashboards.js.

import { OVERVIEW_JSON, overviewDashboard, renderDashboard } from "./dashboards.js";
import { writeGenerated } from "./generated-doc.js";

writeGenerated(OVERVIEW_JSON, renderDashboard(overviewDashboard()));
