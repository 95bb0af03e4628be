/** Whether `value` is a browser origin (`https://app.example.com`, a trailing slash tolerated): CORS_ORIGINS. */
export function isOrigin(value: string): boolean {
  try {
    return new URL(value).origin === value.replace(/\/$/, "");
  } catch {
    return false;
  }
}
