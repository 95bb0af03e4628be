/**
 * An encoding made once per message object. A watch event that many watchers
 * get is one message object for all of them (the domain shares it), so each
 * transport encodes it once — the gRPC frame, the server-sent event's text —
 * rather than once per watcher. Entries live as long as the message does.
 * Whatever else `encode` takes must be the same for a given message (its
 * schema, say), since only the message is the key.
 */
export function encodedOnce<M extends object, A extends unknown[], T>(
  encode: (message: M, ...rest: A) => T,
): (message: M, ...rest: A) => T {
  const encoded = new WeakMap<M, T>();
  return (message, ...rest) => {
    let known = encoded.get(message);
    if (known === undefined) {
      known = encode(message, ...rest);
      encoded.set(message, known);
    }
    return known;
  };
}
