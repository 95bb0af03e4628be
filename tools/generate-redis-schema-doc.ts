// `npm run generate`: rewrites docs/redis-schema.md from the key builders and
// record writers of src/store/schema/. Runs compiled, as
// dist/tools/generate-redis-schema-doc.js.

import { writeGenerated } from "./generated-doc.js";
import { REDIS_SCHEMA_DOC, renderRedisSchemaDoc } from "./redis-schema-doc.js";

writeGenerated(REDIS_SCHEMA_DOC, renderRedisSchemaDoc());
