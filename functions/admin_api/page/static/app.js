// The operator's page: sign-in, the tenant switch, and a client-side router over the views in
// ./views/. Each view is a module exporting `render(ctx, params)`; it draws into ctx.main.
import { api, ApiError, session, whenUnauthorized } from "./api.js";
import { errorBlock, field, fill, h, toast } from "./ui.js";

const TENANT_KEY = "hub.admin.tenant";

const ROUTES = [
  [/^\/admin\/?$/, "integrations"],
  [/^\/admin\/integrations\/?$/, "integrations"],
  [/^\/admin\/integrations\/new\/?$/, "integration-form", () => ({ integrationId: null })],
  [/^\/admin\/integrations\/([^/]+)\/edit\/?$/, "integration-form", (m) => ({ integrationId: decodeURIComponent(m[1]) })],
  [/^\/admin\/queue\/?$/, "queue"],
  [/^\/admin\/messages\/(msg_[0-9a-z]{26})\/?$/, "message", (m) => ({ messageId: m[1] })],
  [/^\/admin\/health\/?$/, "health"],
  [/^\/admin\/access\/?$/, "access"],
  [/^\/admin\/subscriptions\/?$/, "subscriptions"],
  [/^\/admin\/audit\/?$/, "audit"],
];

const main = document.getElementById("main");
const ctx = {
  main,
  me: null,
  tenant: null,
  api,
  /** Whether the signed-in token's role allows an action (what it may not do is not offered). */
  can(action) { return Boolean(ctx.me && ctx.me.can && ctx.me.can[action]); },
  navigate,
  toast,
};

function navigate(path, { replace = false } = {}) {
  if (replace) history.replaceState(null, "", path);
  else history.pushState(null, "", path);
  route();
}

async function route() {
  if (!session.token || !ctx.me) {
    showSignIn();
    return;
  }
  const url = new URL(location.href);
  for (const [pattern, view, params] of ROUTES) {
    const match = url.pathname.match(pattern);
    if (!match) continue;
    markNav(url.pathname);
    fill(main, h("p", { class: "loading", "aria-busy": "true" }, "Loading…"));
    try {
      const module = await import(`./views/${view}.js`);
      await module.render(ctx, { ...(params ? params(match) : {}), search: url.searchParams });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      fill(main, errorBlock(error));
    }
    main.focus({ preventScroll: true });
    return;
  }
  fill(main, h("h1", {}, "Not found"), h("p", {}, "No such page. ", h("a", { href: "/admin/integrations", "data-nav": "" }, "Integrations")));
}

function markNav(path) {
  for (const link of document.querySelectorAll("#nav a")) {
    if (path.startsWith(link.getAttribute("href"))) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
}

function showSignIn(reason) {
  document.getElementById("top").hidden = true;
  const input = h("input", { type: "password", name: "token", autocomplete: "off", required: true, spellcheck: "false" });
  const status = h("div", { "aria-live": "polite" }, reason ? errorBlock(reason) : null);
  const submit = h("button", { type: "submit" }, "Sign in");
  const form = h("form", { class: "card signin", novalidate: true },
    h("h1", {}, "Integration Hub"),
    h("p", {}, "Sign in with an admin token. It stays in this tab only and is sent as a header on each call."),
    field("Admin token", input,
      "A token issued in Keys & tokens (or with hubctl) starts with hub_adm_. The bootstrap token is the one "
      + "chosen when the stack was deployed; with make run it is the demo token printed at start (hub_admin_demo_…)."),
    submit, status);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim();
    if (!token) {
      fill(status, errorBlock({ code: "token_required", message: "enter an admin token" }));
      return;
    }
    submit.disabled = true;
    try {
      await signIn(token);
      route();
    } catch (error) {
      fill(status, errorBlock(error));
      submit.disabled = false;
      input.focus();
    }
  });
  fill(main, form);
  input.focus();
}

async function signIn(token) {
  const me = await api("GET", "/api/admin/me", { token });
  session.token = token;
  ctx.me = me;
  await chooseTenants();
  drawHeader();
}

async function chooseTenants() {
  const select = document.getElementById("tenant");
  let tenants = [];
  if (ctx.me.tenant_id) {
    tenants = [ctx.me.tenant_id];
  } else {
    let cursor = null;
    do {
      const page = await api("GET", "/api/admin/tenants", { query: { limit: 100, cursor } });
      tenants.push(...page.items.map((t) => t.tenant_id));
      cursor = page.next_cursor;
    } while (cursor && tenants.length < 1000);
  }
  const wanted = sessionStorage.getItem(TENANT_KEY);
  ctx.tenant = tenants.includes(wanted) ? wanted : tenants[0] || null;
  fill(select, tenants.map((t) => h("option", { value: t, selected: t === ctx.tenant }, t)));
  select.disabled = tenants.length < 2;
}

function drawHeader() {
  document.getElementById("top").hidden = false;
  const who = document.getElementById("who");
  fill(who, `${ctx.me.role}`, ctx.me.tenant_id ? ` · ${ctx.me.tenant_id}` : " · platform");
  who.title = `token ${ctx.me.token_id}`;
}

function signOut(reason) {
  session.token = "";
  ctx.me = null;
  history.replaceState(null, "", "/admin");
  showSignIn(reason);
}

document.getElementById("tenant").addEventListener("change", (event) => {
  ctx.tenant = event.target.value;
  sessionStorage.setItem(TENANT_KEY, ctx.tenant);
  route();
});
document.getElementById("signout").addEventListener("click", () => signOut());
whenUnauthorized((error) => signOut(error));

// Links marked data-nav route on the client; everything else is a normal link.
document.addEventListener("click", (event) => {
  const link = event.target.closest && event.target.closest("a[data-nav]");
  if (!link || event.ctrlKey || event.metaKey || event.shiftKey || event.button !== 0) return;
  event.preventDefault();
  navigate(link.getAttribute("href"));
});
window.addEventListener("popstate", route);

(async () => {
  if (session.token) {
    try {
      await signIn(session.token);
    } catch (error) {
      session.token = "";
      showSignIn(error);
      return;
    }
  }
  route();
})();
