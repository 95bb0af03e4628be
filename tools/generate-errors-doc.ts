// `npm run generate`: rewrites docs/errors.md from the error table
// (src/server/call/error-table.ts and error-guidance.ts). Runs compiled, as
// dist/tools/generate-errors-doc.js.

import { ERRORS_DOC, renderErrorsDoc } from "./errors-doc.js";
import { writeGenerated } from "./generated-doc.js";

writeGenerated(ERRORS_DOC, renderErrorsDoc());
