// `npm run dashboards` (and `npm run generate`): rewrites deploy/monitoring/dashboards/overview.json
// from tools/dashboards.ts, the Kubernetes monitoring component's ConfigMap of it, and, when the alert
// rules file exists, the component's PrometheusRule of them (tools/monitoring-manifests.ts). Runs
// compiled, as dist/tools/generate-dashboards.js.

import { readFileSync } from "node:fs";
import { basename } from "node:path";
import { OVERVIEW_JSON, overviewDashboard, renderDashboard } from "./dashboards.js";
import { writeGenerated } from "./generated-doc.js";
import {
  ALERT_RULES,
  DASHBOARDS_CONFIGMAP,
  PROMETHEUS_RULE,
  renderDashboardsConfigMap,
  renderPrometheusRule,
} from "./monitoring-manifests.js";

const overview = renderDashboard(overviewDashboard());
writeGenerated(OVERVIEW_JSON, overview);
// The sidecar puts every ConfigMap's files in one folder: the key is named after boardline.
writeGenerated(
  DASHBOARDS_CONFIGMAP,
  renderDashboardsConfigMap({ [`boardline-${basename(OVERVIEW_JSON)}`]: overview }, OVERVIEW_JSON),
);
writeGenerated(PROMETHEUS_RULE, renderPrometheusRule(readFileSync(ALERT_RULES, "utf8")));
