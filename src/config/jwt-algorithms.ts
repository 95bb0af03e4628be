/** The JWT signature algorithms boardline accepts, by the kind of key they need. */
export const HMAC_ALGORITHMS: readonly string[] = ["HS256", "HS384", "HS512"];

export const ASYMMETRIC_ALGORITHMS: readonly string[] = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
];

export const JWT_ALGORITHMS: readonly string[] = [...HMAC_ALGORITHMS, ...ASYMMETRIC_ALGORITHMS];
