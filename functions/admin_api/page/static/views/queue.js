// /admin/queue: the tabs Waiting / Dead-letter / Errors / All, filtered by integration and time,
// paginated by cursor ("Load more"), with Reprocess and Cancel on each row (after a confirmation;
// the row redraws from the API's answer, no reload).
import { ApiError } from "../api.js";
import { badge, confirmAction, errorBlock, fill, h, relTime, statusBadge, timeEl, toast } from "../ui.js";

const TABS = [
  ["waiting", "Waiting"],
  ["dead_letter", "Dead-letter"],
  ["error", "Errors"],
  ["all", "All"],
];
const PAGE = 50;

export async function render(ctx, { search }) {
  const state = {
    tab: TABS.some(([id]) => id === search.get("tab")) ? search.get("tab") : "waiting",
    integration_id: search.get("integration_id") || "",
    since: search.get("since") || "",
    until: search.get("until") || "",
  };
  if (!ctx.tenant) {
    fill(ctx.main, h("h1", {}, "Queue"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  const integrations = await listIntegrations(ctx);
  const results = h("div", { id: "queue-results" });
  const tablist = h("div", { role: "tablist", "aria-label": "Queue tabs", class: "tabs" },
    TABS.map(([id, label]) => h("button", {
      type: "button", role: "tab", id: `tab-${id}`, "aria-selected": String(id === state.tab),
      "aria-controls": "queue-results", tabindex: id === state.tab ? "0" : "-1",
      onclick: () => { state.tab = id; update(); },
    }, label)));
  tablist.addEventListener("keydown", (event) => {
    const tabs = [...tablist.querySelectorAll("[role=tab]")];
    const at = tabs.indexOf(document.activeElement);
    const step = { ArrowRight: 1, ArrowLeft: -1 }[event.key];
    if (at < 0 || !step) return;
    event.preventDefault();
    const next = tabs[(at + step + tabs.length) % tabs.length];
    next.focus();
    next.click();
  });

  const integration = h("select", { id: "filter-integration", name: "integration_id" },
    h("option", { value: "" }, "All integrations"),
    [...integrations.keys()].map((id) => h("option", { value: id, selected: id === state.integration_id }, id)));
  const since = h("input", { type: "datetime-local", id: "filter-since", value: toLocal(state.since) });
  const until = h("input", { type: "datetime-local", id: "filter-until", value: toLocal(state.until) });
  const filters = h("form", { class: "filters", "aria-label": "Filters" },
    h("label", { for: "filter-integration" }, "Integration"), integration,
    h("label", { for: "filter-since" }, "From"), since,
    h("label", { for: "filter-until" }, "To"), until,
    h("button", { type: "submit", class: "secondary" }, "Apply"));
  filters.addEventListener("submit", (event) => {
    event.preventDefault();
    state.integration_id = integration.value;
    state.since = fromLocal(since.value);
    state.until = fromLocal(until.value);
    update();
  });

  fill(ctx.main, h("h1", {}, "Queue"), tablist, filters, results);

  function update() {
    const query = new URLSearchParams(Object.entries(state).filter(([, v]) => v));
    history.replaceState(null, "", `/admin/queue?${query}`);
    for (const tab of tablist.querySelectorAll("[role=tab]")) {
      const selected = tab.id === `tab-${state.tab}`;
      tab.setAttribute("aria-selected", String(selected));
      tab.tabIndex = selected ? 0 : -1;
    }
    load(null);
  }

  async function load(cursor) {
    const body = cursor ? results.querySelector("tbody") : null;
    if (!cursor) fill(results, h("p", { class: "loading", "aria-busy": "true" }, "Loading…"));
    let page;
    try {
      page = await ctx.api("GET", "/api/admin/queue", {
        query: { tenant_id: ctx.tenant, tab: state.tab, limit: PAGE, cursor, ...filtersOf(state) },
      });
    } catch (error) {
      fill(results, errorBlock(error));
      return;
    }
    const rows = page.items.map((item) => row(ctx, item, integrations));
    results.querySelector(".more")?.remove();
    if (body) {
      body.append(...rows);
    } else if (!rows.length) {
      fill(results, h("p", { class: "empty" }, "No messages in this tab."));
    } else {
      fill(results, h("table", { class: "queue" },
        h("caption", { class: "sr-only" }, `Messages: ${state.tab}`),
        h("thead", {}, h("tr", {}, ["Message", "Integration", "Type", "Status", "Retry", "Next attempt", "Error class", "Changed", "Actions"].map((label) => h("th", { scope: "col" }, label)))),
        h("tbody", {}, rows)));
    }
    if (page.next_cursor) {
      results.append(h("button", { type: "button", class: "secondary more", onclick: () => load(page.next_cursor) }, "Load more"));
    }
  }

  update();
}

function filtersOf(state) {
  const out = {};
  if (state.integration_id) out.integration_id = state.integration_id;
  if (state.since) out.since = state.since;
  if (state.until) out.until = state.until;
  return out;
}

/** A queue row; it redraws itself from the answer of Reprocess / Cancel. */
function row(ctx, item, integrations) {
  const tr = h("tr", { "data-message-id": item.message_id });
  draw(tr, ctx, item, integrations);
  return tr;
}

function draw(tr, ctx, item, integrations) {
  const retryMax = integrations.get(item.integration_id)?.retry_policy?.retry_max;
  const retry = item.retry_count ? `retry ${item.retry_count}${retryMax ? ` of ${retryMax}` : ""}` : "—";
  const waiting = item.pipeline_status === "retry_pending";
  const actions = h("div", { class: "actions" });
  if (ctx.can("reprocess") && ["dead_letter", "error"].includes(item.pipeline_status)) {
    actions.append(h("button", { type: "button", "data-action": "reprocess", onclick: () => act(tr, ctx, item, integrations, "reprocess") }, "Reprocess"));
  }
  if (ctx.can("cancel") && ["retry_pending", "dead_letter"].includes(item.pipeline_status)) {
    actions.append(h("button", { type: "button", class: "danger", "data-action": "cancel", onclick: () => act(tr, ctx, item, integrations, "cancel") }, "Cancel"));
  }
  fill(tr,
    h("td", {}, h("a", { href: `/admin/messages/${item.message_id}`, "data-nav": "" }, h("code", {}, item.message_id)),
      item.external_id ? h("div", { class: "sub" }, item.external_id) : null),
    h("td", {}, item.integration_id || "—"),
    h("td", {}, item.message_type || "—"),
    h("td", {}, statusBadge(item.pipeline_status), item.uncertain ? badge("uncertain", "warning", "uncertain") : null),
    h("td", {}, retry),
    h("td", {}, waiting && item.next_retry_at ? h("time", { datetime: item.next_retry_at, title: item.next_retry_at }, relTime(item.next_retry_at)) : "—"),
    h("td", {}, item.last_retry_error_class ? h("code", {}, item.last_retry_error_class) : "—"),
    h("td", {}, timeEl(item.updated_at || item.received_at)),
    h("td", {}, actions));
}

async function act(tr, ctx, item, integrations, action) {
  const question = action === "reprocess"
    ? `Reprocess ${item.message_id}? Its pipeline runs again from the start as a new execution.`
    : `Cancel ${item.message_id}? It stops for good: no further attempt is made.`;
  if (!(await confirmAction(question, action === "reprocess" ? "Reprocess" : "Cancel message"))) return;
  for (const button of tr.querySelectorAll("button")) button.disabled = true;
  try {
    const answer = action === "reprocess"
      ? await ctx.api("POST", "/api/edi-hub/reprocess-message", { body: { message_id: item.message_id } })
      : await ctx.api("POST", `/api/admin/messages/${item.message_id}/cancel-retry`);
    // The API answers with the message's queue row (the listing's own shape).
    const updated = { ...item, ...(answer.queue_row || answer) };
    draw(tr, ctx, updated, integrations);
    toast(action === "reprocess" ? `Reprocessing ${item.message_id}` : `Cancelled ${item.message_id}`);
    if (action === "reprocess") follow(tr, ctx, updated, integrations);
  } catch (error) {
    toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
    for (const button of tr.querySelectorAll("button")) button.disabled = false;
  }
}

/** After a reprocess, watch the message until it settles, redrawing its row. */
async function follow(tr, ctx, item, integrations) {
  for (let i = 0; i < 30 && tr.isConnected; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let view;
    try {
      view = await ctx.api("GET", `/api/admin/messages/${item.message_id}`);
    } catch {
      return;
    }
    draw(tr, ctx, { ...item, ...view }, integrations);
    if (!["received", "mapped", "processing"].includes(view.pipeline_status)) return;
  }
}

async function listIntegrations(ctx) {
  const found = new Map();
  let cursor = null;
  do {
    const page = await ctx.api("GET", `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/integrations`, { query: { limit: 100, cursor } });
    for (const integration of page.items) found.set(integration.integration_id, integration);
    cursor = page.next_cursor;
  } while (cursor && found.size < 1000);
  return found;
}

function toLocal(iso) {
  if (!iso) return "";
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return "";
  const pad = (n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

function fromLocal(value) {
  if (!value) return "";
  const d = new Date(value);
  return Number.isNaN(d.getTime()) ? "" : d.toISOString();
}
