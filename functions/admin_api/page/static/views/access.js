// /admin/access: the selected tenant's partner API keys and the admin tokens (the tenant's, and
// the platform's for a platform token). A new key or token is shown once, with a Copy button, in
// a box that the next render of this view removes: the page never keeps a secret anywhere else
// (not in a variable outside that box, not in storage, never on the console).
import { ApiError } from "../api.js";
import { badge, confirmAction, errorBlock, field, fill, fmtTime, h, listing, secretOnce, toast } from "../ui.js";

export const ROLES = ["viewer", "operator", "admin"];
const PAGE = 50;

/** Whether the signed-in token may take `action`: `me.can` when it names the action, else the
 * role it needs (the API refuses anyway; this only decides what is offered). */
export function allowed(ctx, action, role) {
  const can = ctx.me && ctx.me.can;
  if (can && Object.prototype.hasOwnProperty.call(can, action)) return ctx.can(action);
  return Boolean(ctx.me) && ROLES.indexOf(ctx.me.role) >= ROLES.indexOf(role);
}

/** A slot for a shown-once secret, emptied by its Done button (and by any re-render). */
export function onceSlot() {
  const slot = h("div", { class: "once-slot", "aria-live": "polite" });
  slot.show = (label, secret, ...notes) => {
    const done = h("button", { type: "button", class: "secondary", onclick: () => { slot.replaceChildren(); } }, "Done: hide it");
    fill(slot, secretOnce(label, secret), notes.length ? h("p", { class: "hint" }, ...notes) : null, done);
    slot.querySelector("[data-secret]")?.scrollIntoView({ block: "nearest" });
  };
  return slot;
}

/** Creates what a form describes and shows its secret once: `send()` the request; `shown(created)`
 * the label and secret for the once-slot, `told(created)` the toast. Then the form is reset and
 * the list reloaded; a refusal is shown in the form's status. The submit button is off meanwhile. */
async function createShownOnce({ form, submit, status, once, load }, send, shown, told) {
  submit.disabled = true;
  try {
    const created = await send();
    once.show(...shown(created));
    form.reset();
    toast(told(created));
    await load(null);
  } catch (error) {
    fill(status, errorBlock(error));
  } finally {
    submit.disabled = false;
  }
}

export function failure(error) {
  return error instanceof ApiError ? `${error.code.replaceAll("_", " ")}: ${error.message}` : String(error);
}

/** Every integration id of the tenant (for the "limited to" choices), at most 1000. */
export async function integrationIds(ctx) {
  const ids = [];
  let cursor = null;
  do {
    const page = await ctx.api("GET", `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/integrations`, { query: { limit: 100, cursor } });
    ids.push(...page.items.map((i) => i.integration_id));
    cursor = page.next_cursor;
  } while (cursor && ids.length < 1000);
  return ids;
}

/** Checkboxes of the tenant's integrations; none checked: all of them. `.chosen()` -> ids|null. */
export function integrationChoice(legend, ids, name) {
  const boxes = ids.map((id) => h("input", { type: "checkbox", name, value: id, id: `${name}-${id}` }));
  const set = h("fieldset", { class: "choices" },
    h("legend", {}, legend),
    h("p", { class: "hint" }, "None checked: every integration of the tenant, also those added later."),
    ids.length
      ? h("div", { class: "choice-list" }, boxes.map((box) => h("label", { for: box.id, class: "choice" }, box, " ", box.value)))
      : h("p", { class: "empty" }, "This tenant has no integrations yet."));
  set.chosen = () => {
    const picked = boxes.filter((b) => b.checked).map((b) => b.value);
    return picked.length ? picked : null;
  };
  return set;
}

/** Whether the signed-in token is a platform token (no tenant of its own). */
export function isPlatform(ctx) {
  return Boolean(ctx.me) && (typeof ctx.me.platform === "boolean" ? ctx.me.platform : !ctx.me.tenant_id);
}

export async function render(ctx) {
  if (!ctx.tenant && !isPlatform(ctx)) {
    fill(ctx.main, h("h1", {}, "Keys & tokens"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  const ids = ctx.tenant && allowed(ctx, "manage_keys", "admin") ? await integrationIds(ctx) : [];
  fill(ctx.main,
    h("h1", {}, "Keys & tokens"),
    ctx.tenant ? apiKeys(ctx, ids) : null,
    ctx.tenant ? tokens(ctx, ctx.tenant, `Admin tokens of ${ctx.tenant}`) : null,
    isPlatform(ctx) ? tokens(ctx, null, "Platform admin tokens") : null);
}

// --- partner API keys -----------------------------------------------------------------------

function apiKeys(ctx, ids) {
  const base = `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/api-keys`;
  const manage = allowed(ctx, "manage_keys", "admin");
  const once = onceSlot();
  const list = h("div", { class: "listing" });
  const { load, changed } = listing(list, {
    fetchPage: (cursor) => ctx.api("GET", base, { query: { limit: PAGE, cursor } }),
    rowsOf: (keys) => keys.map((key) => keyRow(key)),
    frame: (rows) => h("table", { class: "access-table" },
      h("caption", { class: "sr-only" }, "Partner API keys"),
      h("thead", {}, h("tr", {}, ["Label", "Key", "Integrations", "Created", "Last used", "Status", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)),
    holder: "tbody",
    empty: "No API keys yet.",
  });
  const section = h("section", { class: "access-block", "aria-labelledby": "keys-title", "data-section": "api-keys" },
    h("h2", { id: "keys-title" }, "Partner API keys"),
    h("p", { class: "hint" }, "Partners send these as a Bearer token to the ingest API. Only a hash is stored: a key is shown once, when created or rotated."),
    once);

  if (manage) {
    const label = h("input", { type: "text", name: "label", maxlength: "100", autocomplete: "off" });
    const limit = integrationChoice("Limited to integrations", ids, "key-integration");
    const submit = h("button", { type: "submit" }, "Create API key");
    const status = h("div", { "aria-live": "polite" });
    const form = h("form", { class: "card access-form", "aria-label": "New API key" },
      h("h3", {}, "New API key"), field("Label", label, "Who or what uses it, e.g. \"ERP production\"."), limit, submit, status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      fill(status);
      const body = {};
      if (label.value.trim()) body.label = label.value.trim();
      const chosen = limit.chosen();
      if (chosen) body.integration_ids = chosen;
      await createShownOnce({ form, submit, status, once, load }, () => ctx.api("POST", base, { body }),
        (created) => [`API key ${created.label || created.key_id}`, created.key], (created) => `Created API key ${created.key_id}`);
    });
    section.append(form);
  }
  section.append(list);


  function keyRow(key) {
    const tr = h("tr", { "data-key-id": key.key_id });
    drawKey(tr, key);
    return tr;
  }

  function drawKey(tr, key) {
    const actions = h("div", { class: "actions" });
    if (manage && key.state === "active") {
      actions.append(
        h("button", { type: "button", class: "secondary", "data-action": "rotate", "aria-label": `Rotate ${key.label || key.key_id}`, onclick: () => rotate(tr, key) }, "Rotate"),
        h("button", { type: "button", class: "danger", "data-action": "revoke", "aria-label": `Revoke ${key.label || key.key_id}`, onclick: () => revoke(tr, key) }, "Revoke"));
    } else if (manage && key.state === "rotating") {
      actions.append(h("button", { type: "button", class: "danger", "data-action": "revoke", "aria-label": `Revoke ${key.label || key.key_id} now`, onclick: () => revoke(tr, key) }, "Revoke now"));
    }
    fill(tr,
      h("td", {}, key.label || h("span", { class: "empty" }, "no label")),
      h("td", {}, h("code", {}, key.key_id), key.prefix ? h("div", { class: "sub" }, `${key.prefix}…`) : null),
      h("td", {}, key.integration_ids ? key.integration_ids.join(", ") : h("span", { class: "sub" }, "all integrations")),
      h("td", {}, key.created_at ? h("span", { title: key.created_at }, fmtTime(key.created_at)) : "—"),
      h("td", {}, key.last_used_day || "—"),
      h("td", {}, keyState(key)),
      h("td", {}, actions));
  }

  async function revoke(tr, key) {
    changed();
    const name = key.label ? `"${key.label}" (${key.key_id})` : key.key_id;
    if (!(await confirmAction(`Revoke API key ${name}? Partners using it are refused (401) from now on. This cannot be undone.`, "Revoke key"))) return;
    await act(tr, async () => {
      const revoked = await ctx.api("POST", `${base}/${key.key_id}/revoke`);
      drawKey(tr, revoked);
      toast(`Revoked API key ${key.key_id}`);
    });
  }

  async function rotate(tr, key) {
    changed();
    const name = key.label ? `"${key.label}" (${key.key_id})` : key.key_id;
    if (!(await confirmAction(`Rotate API key ${name}? A new key is shown once; the current one keeps working for a grace period of 24 h, then stops.`, "Rotate key"))) return;
    await act(tr, async () => {
      const rotated = await ctx.api("POST", `${base}/${key.key_id}/rotate`, { body: {} });
      const until = rotated.previous && rotated.previous.expires_at;
      once.show(`New API key ${rotated.label || rotated.key_id}`, rotated.key,
        "The previous key ", h("code", {}, key.key_id), " keeps working until ",
        until ? h("time", { datetime: until }, fmtTime(until)) : "the end of its grace period", ".");
      drawKey(tr, rotated.previous || { ...key, state: "rotating" });
      tr.before(keyRow({ ...rotated, key: undefined, previous: undefined }));
      toast(`Rotated API key ${key.key_id}`);
    });
  }

  load(null);
  return section;
}

function keyState(key) {
  if (key.state === "active") return badge("active", "ok", "state");
  if (key.state === "rotating") {
    return h("span", {}, badge("rotating", "warning", "state"),
      h("div", { class: "sub" }, "works until ", key.expires_at ? h("time", { datetime: key.expires_at, title: key.expires_at }, fmtTime(key.expires_at)) : "—"));
  }
  return h("span", {}, badge(key.state || "revoked", "muted", "state"),
    key.revoked_at ? h("div", { class: "sub" }, "since ", h("time", { datetime: key.revoked_at, title: key.revoked_at }, fmtTime(key.revoked_at))) : null);
}

async function act(tr, work) {
  for (const button of tr.querySelectorAll("button")) button.disabled = true;
  try {
    await work();
  } catch (error) {
    toast(failure(error), "critical");
    for (const button of tr.querySelectorAll("button")) button.disabled = false;
  }
}

// --- admin tokens ---------------------------------------------------------------------------

function tokens(ctx, tenantId, title) {
  const scope = tenantId ? "tenant" : "platform";
  const manage = allowed(ctx, "manage_tokens", "admin");
  const once = onceSlot();
  const list = h("div", { class: "listing" });
  const { load, changed } = listing(list, {
    fetchPage: (cursor) => ctx.api("GET", "/api/admin/tokens", { query: { tenant_id: tenantId, limit: PAGE, cursor } }),
    rowsOf: (found) => found.map((token) => {
      const tr = h("tr", { "data-token-id": token.token_id });
      drawToken(tr, token);
      return tr;
    }),
    frame: (rows) => h("table", { class: "access-table" },
      h("caption", { class: "sr-only" }, title),
      h("thead", {}, h("tr", {}, ["Label", "Token", "Role", "Created", "Created by", "Status", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
      h("tbody", {}, rows)),
    holder: "tbody",
    empty: "No admin tokens yet.",
  });
  const titleId = `tokens-${scope}-title`;
  const section = h("section", { class: "access-block", "aria-labelledby": titleId, "data-section": `tokens-${scope}` },
    h("h2", { id: titleId }, title),
    h("p", { class: "hint" }, tenantId
      ? "Tokens for this page and the admin API, limited to this tenant. A role never exceeds its creator's."
      : "Platform tokens see and act on every tenant."),
    once);

  if (manage) {
    const label = h("input", { type: "text", name: "label", maxlength: "100", required: true, autocomplete: "off" });
    const mine = ROLES.indexOf(ctx.me.role);
    const role = h("select", { name: "role" }, ROLES.filter((_, i) => i <= mine).map((r) => h("option", { value: r, selected: r === "viewer" }, r)));
    const submit = h("button", { type: "submit" }, scope === "tenant" ? "Create admin token" : "Create platform token");
    const status = h("div", { "aria-live": "polite" });
    const form = h("form", { class: "card access-form", "aria-label": `New ${scope} admin token`, novalidate: true },
      h("h3", {}, scope === "tenant" ? "New admin token" : "New platform token"),
      field("Token label", label, "Who holds it, e.g. \"on-call operator\"."),
      field("Role", role, "viewer: reads; operator: also reprocesses, cancels, pauses; admin: also configures and manages keys and tokens."),
      submit, status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      fill(status);
      if (!label.value.trim()) {
        fill(status, errorBlock({ code: "label_required", message: "give the token a label" }));
        label.focus();
        return;
      }
      const body = { label: label.value.trim(), role: role.value, tenant_id: tenantId };
      await createShownOnce({ form, submit, status, once, load }, () => ctx.api("POST", "/api/admin/tokens", { body }),
        (created) => [`Admin token "${created.label}" (${created.role})`, created.token], (created) => `Created admin token ${created.token_id}`);
    });
    section.append(form);
  }
  section.append(list);


  function drawToken(tr, token) {
    const self = token.token_id === ctx.me.token_id;
    const actions = h("div", { class: "actions" });
    if (manage && token.state === "active") {
      actions.append(h("button", { type: "button", class: "danger", "data-action": "revoke", "aria-label": `Revoke ${token.label}`, onclick: () => revoke(tr, token) }, "Revoke"));
    }
    fill(tr,
      h("td", {}, token.label, self ? [" ", badge("you", "info", "self")] : null),
      h("td", {}, h("code", {}, token.token_id), token.prefix ? h("div", { class: "sub" }, `${token.prefix}…`) : null),
      h("td", {}, token.role),
      h("td", {}, token.created_at ? h("span", { title: token.created_at }, fmtTime(token.created_at)) : "—"),
      h("td", {}, token.created_by ? h("code", {}, token.created_by) : "—"),
      h("td", {}, token.state === "active" ? badge("active", "ok", "state")
        : h("span", {}, badge("revoked", "muted", "state"), token.revoked_at ? h("div", { class: "sub" }, "since ", h("time", { datetime: token.revoked_at, title: token.revoked_at }, fmtTime(token.revoked_at))) : null)),
      h("td", {}, actions));
  }

  async function revoke(tr, token) {
    changed();
    const self = token.token_id === ctx.me.token_id;
    const question = self
      ? `Warning: "${token.label}" is the token you are signed in with. Revoking it signs you out of this page at once, and it cannot sign in again. Revoke it anyway?`
      : `Revoke admin token "${token.label}" (${token.token_id})? Whoever holds it is refused from now on. This cannot be undone.`;
    if (!(await confirmAction(question, self ? "Revoke my own token" : "Revoke token"))) return;
    await act(tr, async () => {
      const revoked = await ctx.api("POST", `/api/admin/tokens/${token.token_id}/revoke`);
      drawToken(tr, revoked);
      toast(`Revoked admin token ${token.token_id}`);
      // Our own token: the next call answers 401 and the page signs out (app.js).
      if (self) await ctx.api("GET", "/api/admin/me").catch(() => {});
    });
  }

  load(null);
  return section;
}
