/** Loads one module of boardline's build (dist/), with a plain message when the build is missing. */

/**
 * @param {string} path the module's path under dist/
 * @returns {Promise<unknown>}
 */
export async function fromBuild(path) {
  const url = new URL(`../../dist/${path}`, import.meta.url);
  try {
    return await import(url.href);
  } catch (err) {
    const missing = err instanceof Error && "code" in err && err.code === "ERR_MODULE_NOT_FOUND";
    if (missing && err.message.includes(url.pathname)) throw new Error(`dist/${path} is missing: run npm run build`);
    throw err;
  }
}
