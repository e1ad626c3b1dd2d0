// Preloaded into the conformance suite (`node --import`): its requests carry
// the server's token, `WIELD_TEST_TOKEN`, as a configured client's would;
// the suite has no option for a bearer token of its own.
const token = process.env.WIELD_TEST_TOKEN;
if (!token) {
  throw new Error("WIELD_TEST_TOKEN is not set");
}
const send = globalThis.fetch;
globalThis.fetch = (input, init = {}) => {
  const headers = new Headers(init.headers ?? (input instanceof Request ? input.headers : undefined));
  if (!headers.has("authorization")) {
    headers.set("authorization", `Bearer ${token}`);
  }
  return send(input, { ...init, headers });
};
