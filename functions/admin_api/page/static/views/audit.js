// /admin/audit: who did what when. The selected tenant's log (and, for a platform token, a
// switch to the platform's: DLQ redrives, platform tokens), newest first, "Load more" by cursor.
// Before/after are shown compactly: the fields that changed; the full views fold out.
import { errorBlock, fill, fmtTime, h, timeEl } from "../ui.js";
import { isPlatform } from "./access.js";

const PAGE = 50;

export async function render(ctx, { search }) {
  const platform = isPlatform(ctx);
  let scope = platform && (search.get("scope") === "platform" || !ctx.tenant) ? "platform" : "tenant";
  const results = h("div", { id: "audit-results" });
  const switcher = platform ? scopeSwitch() : null;

  fill(ctx.main, h("h1", {}, "Audit log"),
    h("p", { class: "hint" }, "Every change made through the admin API: who (the admin token), what (action and target), when, and what changed. Secrets are masked."),
    switcher, results);

  function scopeSwitch() {
    const options = [["tenant", ctx.tenant ? `Tenant ${ctx.tenant}` : "Tenant"], ["platform", "Platform"]];
    const set = h("fieldset", { class: "filters audit-scope" }, h("legend", {}, "Log"),
      options.map(([value, label]) => {
        const input = h("input", { type: "radio", name: "audit-scope", id: `audit-scope-${value}`, value, checked: value === scope, disabled: value === "tenant" && !ctx.tenant });
        input.addEventListener("change", () => {
          if (!input.checked) return;
          scope = value;
          history.replaceState(null, "", scope === "platform" ? "/admin/audit?scope=platform" : "/admin/audit");
          load(null);
        });
        return h("label", { for: input.id, class: "choice" }, input, " ", label);
      }));
    return set;
  }

  async function load(cursor) {
    const path = scope === "platform" ? "/api/admin/audit" : `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/audit`;
    if (!cursor) fill(results, h("p", { class: "loading", "aria-busy": "true" }, "Loading…"));
    let page;
    try {
      page = await ctx.api("GET", path, { query: { limit: PAGE, cursor } });
    } catch (error) {
      fill(results, errorBlock(error));
      return;
    }
    const rows = page.items.map((entry) => row(entry));
    results.querySelector(".more")?.remove();
    const body = cursor ? results.querySelector("tbody") : null;
    if (body) body.append(...rows);
    else if (!rows.length) fill(results, h("p", { class: "empty" }, "No entries yet."));
    else {
      fill(results, h("table", { class: "audit" },
        h("caption", { class: "sr-only" }, `Audit log: ${scope === "platform" ? "platform" : ctx.tenant}, newest first`),
        h("thead", {}, h("tr", {}, ["When", "Who", "Action", "Target", "Change"].map((c) => h("th", { scope: "col" }, c)))),
        h("tbody", {}, rows)));
    }
    if (page.next_cursor) results.append(h("button", { type: "button", class: "secondary more", onclick: () => load(page.next_cursor) }, "Load more"));
  }

  if (scope === "tenant" && !ctx.tenant) {
    fill(results, h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  await load(null);
}

function row(entry) {
  const actor = entry.actor || {};
  return h("tr", { "data-entry-id": entry.entry_id, "data-action": entry.action },
    h("td", {}, h("time", { datetime: entry.at, title: entry.at }, fmtTime(entry.at)), h("div", { class: "sub" }, timeEl(entry.at))),
    h("td", {}, actor.label || "—", actor.token_id ? h("div", { class: "sub" }, h("code", {}, actor.token_id)) : null),
    h("td", {}, h("code", {}, entry.action)),
    h("td", {}, Object.entries(entry.target || {}).map(([k, v]) => h("div", {}, `${k}: `, h("code", {}, String(v))))),
    h("td", {}, change(entry.before, entry.after)));
}

/** The fields whose values differ, as "field: before → after"; the full views fold out. */
export function change(before, after) {
  if (!before && !after) return "—";
  const lines = [];
  if (before && after) {
    for (const key of [...new Set([...Object.keys(before), ...Object.keys(after)])]) {
      const was = compact(before[key]);
      const now = compact(after[key]);
      if (was !== now) lines.push(h("li", {}, h("strong", {}, key), ": ", h("del", {}, was), " → ", h("ins", {}, now)));
    }
  }
  const summary = before && after ? (lines.length ? "" : "no field changed")
    : after ? "created" : "removed";
  return h("div", { class: "change" },
    lines.length ? h("ul", { class: "diff" }, lines) : h("span", { class: "sub" }, summary),
    h("details", {}, h("summary", {}, before && after ? "Before and after" : after ? "After" : "Before"),
      before ? [h("p", { class: "sub" }, "Before"), h("pre", { class: "json" }, JSON.stringify(before, null, 2))] : null,
      after ? [h("p", { class: "sub" }, "After"), h("pre", { class: "json" }, JSON.stringify(after, null, 2))] : null));
}

function compact(value) {
  if (value === undefined) return "(none)";
  if (value === null) return "null";
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return text.length > 80 ? `${text.slice(0, 77)}…` : text;
}
