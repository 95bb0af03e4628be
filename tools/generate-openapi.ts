// `npm run generate` (after buf generate): writes the OpenAPI document of the
// JSON routes, generated from the protos (tools/openapi/), to
// openapi/boardline.v1.json (or the file named as the first argument). Runs
// compiled, as dist/tools/generate-openapi.js, from the repository root.

import { writeGenerated } from "./generated-doc.js";
import { openApiDocument } from "./openapi/document.js";
import { loadProtos } from "./openapi/protos.js";

const path = process.argv[2] ?? "openapi/boardline.v1.json";
const text = `${JSON.stringify(openApiDocument(loadProtos()), null, 2)}\n`;
writeGenerated(path, text);
