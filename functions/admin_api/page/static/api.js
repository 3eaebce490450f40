// The admin API client: every call carries the admin token as a header (no cookie is ever
// used, so there is nothing for another site to forge). Errors come back in the API's one
// shape {"error": {code, message, details}} and are thrown as ApiError.

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

/** api("GET", "/api/admin/queue", {query: {...}}) -> the parsed JSON body (null for 204). */
export async function api(method, path, { query, body, headers = {}, token } = {}) {
  const url = new URL(path, location.origin);
  for (const [key, value] of Object.entries(query || {})) {
    if (value !== undefined && value !== null && value !== "") url.searchParams.set(key, value);
  }
  const init = { method, headers: { Accept: "application/json", ...headers }, cache: "no-store", credentials: "omit" };
  init.headers.Authorization = `Bearer ${token || session.token}`;
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(url, init);
  } catch (cause) {
    throw new ApiError(0, "network_error", "the admin API could not be reached; try again");
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
