// The admin API client: every call carries the admin token as a header (no cookie is ever
// used, so there is nothing for another site to forge). Errors come back in the API's one
// shape {"error": {code, message, details}} and are thrown as ApiError.
//
// Every mutating call (POST, PUT, PATCH, DELETE) carries an Idempotency-Key: a fresh one per
// call, i.e. per user action, unless the caller passes its own. The client resends a call with
// the same key only when it cannot know whether the first one ran (the network failed) or the
// API says the first one is still running (409 idempotency_key_in_use): the API then answers the
// first result again instead of acting twice.

const TOKEN_KEY = "hub.admin.token";

export class ApiError extends Error {
  constructor(status, code, message, details) {
    super(message);
    this.status = status;
    this.code = code;
    this.details = details;
  }
}

export const session = {
  get token() { return sessionStorage.getItem(TOKEN_KEY) || ""; },
  set token(value) {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  },
};

let onUnauthorized = () => {};
export function whenUnauthorized(handler) { onUnauthorized = handler; }

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);
/** Waits before each resend of a mutating call (same key), in ms. */
const RESEND_AFTER = [600, 1800];

/** A fresh Idempotency-Key (a random UUID). */
export function newIdempotencyKey() {
  if (globalThis.crypto && typeof crypto.randomUUID === "function") return crypto.randomUUID();
  // Outside a secure context randomUUID is missing; getRandomValues is not.
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((b) => b.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** api("GET", "/api/admin/queue", {query: {...}}) -> the parsed JSON body (null for 204).
 * A mutating call sends `idempotencyKey` (a fresh one when not given) as Idempotency-Key. */
export async function api(method, path, { query, body, headers = {}, token, idempotencyKey } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const init = { method, headers: { Accept: "application/json", ...headers }, cache: "no-store", credentials: "omit" };
  init.headers.Authorization = `Bearer ${token || session.token}`;
  const mutating = MUTATING.has(method.toUpperCase());
  if (mutating) init.headers["Idempotency-Key"] = idempotencyKey || newIdempotencyKey();
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  for (let attempt = 0; ; attempt += 1) {
    const resend = mutating && attempt < RESEND_AFTER.length;
    try {
      response = await fetch(url, init);
    } catch (cause) {
      if (resend) {
        await pause(RESEND_AFTER[attempt]);
        continue;
      }
      throw new ApiError(0, "network_error", "the admin API could not be reached; try again");
    }
    if (resend && response.status === 409 && (await errorCode(response)) === "idempotency_key_in_use") {
      await pause(RESEND_AFTER[attempt]);
      continue;
    }
    break;
  }
  const text = await response.text();
  let data = null;
  if (text) {
    try { data = JSON.parse(text); } catch { data = null; }
  }
  if (!response.ok) {
    const error = (data && data.error) || {};
    const failure = new ApiError(response.status, error.code || `http_${response.status}`,
      error.message || response.statusText || "request failed", error.details);
    if (response.status === 401 && !token) onUnauthorized(failure);
    throw failure;
  }
  if (data !== null && response.headers.get("ETag")) {
    Object.defineProperty(data, "etag", { value: response.headers.get("ETag"), enumerable: false });
  }
  return data;
}

function pause(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** The error code of a refusal, read from a clone (the answer itself stays unread). */
async function errorCode(response) {
  try {
    const data = await response.clone().json();
    return data && data.error ? data.error.code : null;
  } catch {
    return null;
  }
}
