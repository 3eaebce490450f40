// /admin/queue: the tabs Waiting / Dead-letter / Errors / All with how many messages each holds
// now, filtered by integration and time, paginated by cursor ("Load more"), with Reprocess and
// Cancel on each row (after a confirmation; the row redraws from the API's answer, no reload).
// A search box finds messages by id, external id, Idempotency-Key, correlation id or business key;
// "… all matching" starts a bulk job on what the tab (or the search) shows, and the jobs panel
// follows its progress. Auto-refresh (off by default) polls the visible tab and the counts only,
// and stops while the browser tab is hidden.
import { ApiError } from "../api.js";
import { CANCELLABLE, REPROCESSABLE, cancel, reprocess } from "../actions.js";
import { badge, confirmAction, errorBlock, fill, h, oneAtATime, relTime, scroller, statusBadge, timeEl, toast } from "../ui.js";

const TABS = [
  ["waiting", "Waiting"],
  ["dead_letter", "Dead-letter"],
  ["error", "Errors"],
  ["all", "All"],
];
const SEARCH_BY = [
  ["any", "any identifier"],
  ["message_id", "message id"],
  ["external_id", "external id"],
  ["idempotency_key", "Idempotency-Key"],
  ["correlation_id", "correlation id"],
  ["business_key", "business key value"],
];
const PAGE = 50;
/** Auto-refresh periods offered (seconds); each tick makes 2 requests (the tab's page, the counts). */
const PERIODS = [10, 15, 30, 60];
const DEFAULT_PERIOD = 15;
const REFRESH_KEY = "hub.queue.refresh";
/** The jobs panel polls this often while a job runs (and stops when none does). */
const JOBS_POLL_MS = 2000;
/** Which bulk actions a tab offers (the API skips what an action cannot apply to, with a reason). */
const BULK = {
  waiting: ["cancel"],
  dead_letter: ["reprocess", "cancel"],
  error: ["reprocess"],
  all: ["reprocess", "cancel"],
  search: ["reprocess", "cancel"],
};

export async function render(ctx, { search }) {
  const state = {
    tab: TABS.some(([id]) => id === search.get("tab")) ? search.get("tab") : "waiting",
    integration_id: search.get("integration_id") || "",
    since: search.get("since") || "",
    until: search.get("until") || "",
    q: search.get("q") || "",
    by: SEARCH_BY.some(([id]) => id === search.get("by")) ? search.get("by") : "any",
  };
  if (!ctx.tenant) {
    fill(ctx.main, h("h1", {}, "Queue"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  const integrations = await listIntegrations(ctx);
  const results = h("div", { id: "queue-results", "aria-live": "polite" });
  let pagesShown = 0;
  let counts = null;

  // --- search ---------------------------------------------------------------------------------
  const q = h("input", {
    type: "search", id: "queue-q", name: "q", value: state.q, maxlength: "256", spellcheck: "false",
    autocomplete: "off", placeholder: "PO-4711, msg_…, an Idempotency-Key…",
  });
  const by = h("select", { id: "queue-by", name: "by" },
    SEARCH_BY.map(([id, label]) => h("option", { value: id, selected: id === state.by }, label)));
  const clear = h("button", { type: "button", class: "secondary", hidden: !state.q, onclick: () => { q.value = ""; state.q = ""; update(); } }, "Clear search");
  const finder = h("form", { class: "filters search", role: "search", "aria-label": "Find a message" },
    h("label", { for: "queue-q" }, "Find"), q,
    h("label", { for: "queue-by" }, "by"), by,
    h("button", { type: "submit" }, "Search"), clear);
  finder.addEventListener("submit", (event) => {
    event.preventDefault();
    state.q = q.value.trim();
    state.by = by.value;
    update();
  });

  // --- tabs, with their counts ----------------------------------------------------------------
  const tablist = h("div", { role: "tablist", "aria-label": "Queue tabs", class: "tabs" },
    TABS.map(([id, label]) => h("button", {
      type: "button", role: "tab", id: `tab-${id}`, "aria-selected": String(id === state.tab && !state.q),
      "aria-controls": "queue-results", tabindex: id === state.tab ? "0" : "-1",
      onclick: () => { state.tab = id; state.q = ""; q.value = ""; update(); },
    }, label, id === "all" ? null : h("span", { class: "count", "data-count": id, hidden: true }))));
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

  // --- filters and auto-refresh ---------------------------------------------------------------
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
  const remembered = readRefresh();
  const auto = h("input", { type: "checkbox", id: "auto-refresh", checked: remembered.on });
  const period = h("select", { id: "auto-refresh-period", "aria-label": "Auto-refresh period" },
    PERIODS.map((s) => h("option", { value: String(s), selected: s === remembered.seconds }, `every ${s} s`)));
  const refreshStatus = h("span", { class: "hint", id: "refresh-status", "aria-live": "polite" });
  const refresher = h("div", { class: "filters refresher" },
    auto, h("label", { for: "auto-refresh" }, "Auto-refresh"), period, refreshStatus);

  // --- bulk actions and jobs ------------------------------------------------------------------
  const bulkBar = h("div", { class: "actions bulk", "aria-label": "Bulk actions" });
  const jobs = jobsPanel(ctx);

  fill(ctx.main, h("h1", {}, "Queue"), finder, tablist, filters, refresher, bulkBar, results, jobs.element);

  function update() {
    const query = new URLSearchParams(Object.entries(state).filter(([key, v]) => v && !(key === "by" && (!state.q || v === "any"))));
    history.replaceState(null, "", `/admin/queue?${query}`);
    for (const tab of tablist.querySelectorAll("[role=tab]")) {
      const selected = tab.id === `tab-${state.tab}`;
      tab.setAttribute("aria-selected", String(selected && !state.q));
      tab.tabIndex = selected ? 0 : -1;
    }
    clear.hidden = !state.q;
    drawBulk();
    load(null);
    loadCounts();
  }

  /** The first page (cursor null) replaces the table; later pages append to it. `quiet`: an
   * auto-refresh, which keeps the current rows until the new ones are there. Only the latest
   * load draws: an answer that comes after the operator asked for something else (a tab, a
   * search, a filter) is dropped, never shown under the new question. */
  let latestLoad = 0;
  async function load(cursor, { quiet = false } = {}) {
    const ticket = ++latestLoad;
    const body = cursor ? results.querySelector("tbody") : null;
    if (!cursor && !quiet) fill(results, h("p", { class: "loading", "aria-busy": "true" }, "Loading…"));
    let page;
    try {
      page = state.q
        ? await ctx.api("GET", "/api/admin/messages", {
          query: { tenant_id: ctx.tenant, q: state.q, by: state.by, integration_id: state.integration_id, limit: PAGE, cursor },
        })
        : await ctx.api("GET", "/api/admin/queue", {
          query: { tenant_id: ctx.tenant, tab: state.tab, limit: PAGE, cursor, ...filtersOf(state) },
        });
    } catch (error) {
      if (!quiet && ticket === latestLoad) fill(results, errorBlock(error));
      return;
    }
    if (ticket !== latestLoad) return;
    const searching = Boolean(state.q);
    const rows = page.items.map((item) => row(ctx, item, integrations, searching));
    results.querySelector(".more")?.remove();
    if (body) {
      body.append(...rows);
      pagesShown += 1;
    } else {
      pagesShown = 1;
      const heading = searching
        ? h("p", { class: "search-summary" }, `${page.items.length}${page.next_cursor ? "+" : ""} found for “${state.q}” by ${label(SEARCH_BY, state.by)}`,
          state.integration_id ? ` in ${state.integration_id}` : "", ".")
        : null;
      if (!rows.length) {
        fill(results, heading, h("p", { class: "empty" }, searching ? "No message matches." : "No messages in this tab."));
      } else {
        const columns = ["Message", "Integration", "Type", "Status", "Retry", "Next attempt", "Error class", "Changed", ...(searching ? ["Matched by"] : []), "Actions"];
        fill(results, heading, scroller(h("table", { class: "queue" },
          h("caption", { class: "sr-only" }, searching ? `Messages found for ${state.q}` : `Messages: ${state.tab}`),
          h("thead", {}, h("tr", {}, columns.map((text) => h("th", { scope: "col" }, text)))),
          h("tbody", {}, rows)), "Messages"));
      }
    }
    if (page.next_cursor) {
      results.append(h("button", { type: "button", class: "secondary more", onclick: () => load(page.next_cursor) }, "Load more"));
    }
  }

  async function loadCounts() {
    try {
      counts = await ctx.api("GET", "/api/admin/queue/counts", {
        query: { tenant_id: ctx.tenant, integration_id: state.integration_id },
      });
    } catch {
      counts = null; // the tabs work without their counts
    }
    for (const span of tablist.querySelectorAll("[data-count]")) {
      const tab = span.dataset.count;
      const n = counts && counts.counts ? counts.counts[tab] : undefined;
      if (n === undefined || n === null) {
        span.hidden = true;
        continue;
      }
      const atLeast = (counts.at_least || []).includes(tab) || n >= counts.capped_at;
      span.hidden = false;
      span.textContent = `${n}${atLeast ? "+" : ""}`;
      span.title = `${atLeast ? "at least " : ""}${n} message(s) in this tab now${state.integration_id ? ` for ${state.integration_id}` : ""} (the time filter does not apply)`;
    }
  }

  function drawBulk() {
    const scope = state.q ? "search" : state.tab;
    const offered = BULK[scope].filter((action) => ctx.can(action));
    fill(bulkBar, offered.map((action) => {
      const button = h("button", {
        type: "button", class: action === "cancel" ? "danger" : "secondary", "data-bulk": action,
      }, action === "reprocess" ? "Reprocess all matching…" : "Cancel all matching…");
      button.addEventListener("click", oneAtATime(button, () => startBulk(action)));
      return button;
    }));
  }

  async function startBulk(action) {
    const filter = bulkFilter(state);
    const count = !state.q && counts && counts.counts && state.tab in counts.counts ? counts.counts[state.tab] : null;
    const what = action === "reprocess"
      ? "Reprocess every message matching"
      : "Cancel every message matching";
    const tail = action === "reprocess"
      ? "It runs as a bulk job, at each connection's pace; messages the destination already accepted are skipped."
      : "It runs as a bulk job; messages that are not waiting or dead-lettered are skipped. Cancelled messages get no further attempt.";
    const sure = await confirmAction(
      `${what} ${describe(filter)}${count !== null ? ` (${count}${(counts.at_least || []).includes(state.tab) ? "+" : ""} now)` : ""}? ${tail}`,
      action === "reprocess" ? "Start reprocessing" : "Start cancelling",
      action === "reprocess" ? "Reprocess all matching" : "Cancel all matching");
    if (!sure) return;
    try {
      const job = await ctx.api("POST", "/api/admin/bulk-jobs", { body: { tenant_id: ctx.tenant, action, filter } });
      toast(`Bulk ${action} started: job ${job.job_id}`);
      jobs.show(job);
    } catch (error) {
      toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
    }
  }

  // --- auto-refresh: only the visible tab and the counts, only while this tab is visible -------
  let timer = null;
  function schedule() {
    clearInterval(timer);
    timer = null;
    writeRefresh(auto.checked, Number(period.value));
    if (!auto.checked) {
      refreshStatus.textContent = "";
      return;
    }
    if (document.visibilityState !== "visible") {
      refreshStatus.textContent = "Paused while this browser tab is hidden.";
      return;
    }
    refreshStatus.textContent = `On: the tab and its count every ${period.value} s.`;
    timer = setInterval(tick, Number(period.value) * 1000);
  }
  function tick() {
    if (!results.isConnected) {
      stop();
      return;
    }
    if (document.visibilityState !== "visible") {
      schedule();
      return;
    }
    // Not while the operator is deciding or acting, nor over pages they loaded.
    if (document.getElementById("confirm").open || results.querySelector("button:disabled")) return;
    if (pagesShown <= 1) load(null, { quiet: true });
    loadCounts();
    refreshStatus.textContent = `On: every ${period.value} s; refreshed ${new Date().toLocaleTimeString()}.`;
  }
  function onVisibility() {
    if (!results.isConnected) {
      stop();
      return;
    }
    if (auto.checked && document.visibilityState === "visible") tick();
    schedule();
  }
  function stop() {
    clearInterval(timer);
    timer = null;
    document.removeEventListener("visibilitychange", onVisibility);
  }
  auto.addEventListener("change", () => {
    schedule();
    if (auto.checked) tick();
  });
  period.addEventListener("change", schedule);
  document.addEventListener("visibilitychange", onVisibility);

  update();
  schedule();
  jobs.load();
}

function label(pairs, id) {
  return (pairs.find(([key]) => key === id) || [id, id])[1];
}

function filtersOf(state) {
  const out = {};
  if (state.integration_id) out.integration_id = state.integration_id;
  if (state.since) out.since = state.since;
  if (state.until) out.until = state.until;
  return out;
}

/** The bulk job's filter: what the tab (or the search) shows. */
function bulkFilter(state) {
  if (state.q) {
    return { tab: "all", q: state.q, by: state.by, ...(state.integration_id ? { integration_id: state.integration_id } : {}) };
  }
  return { tab: state.tab, ...filtersOf(state) };
}

const TAB_NAMES = Object.fromEntries(TABS);

/** A filter in words, as the confirmation and the jobs panel name it. */
function describe(filter) {
  const parts = [];
  if (filter.q) parts.push(`the search “${filter.q}”${filter.by && filter.by !== "any" ? ` by ${label(SEARCH_BY, filter.by)}` : ""}`);
  else parts.push(`the ${TAB_NAMES[filter.tab] || filter.tab} tab`);
  parts.push(filter.integration_id ? `integration ${filter.integration_id}` : "every integration");
  if (filter.error_class) parts.push(`error class ${filter.error_class}`);
  if (filter.since) parts.push(`from ${new Date(filter.since).toLocaleString()}`);
  if (filter.until) parts.push(`until ${new Date(filter.until).toLocaleString()}`);
  return parts.join(", ");
}

/** A queue row; it redraws itself from the answer of Reprocess / Cancel. */
function row(ctx, item, integrations, searching) {
  const tr = h("tr", { "data-message-id": item.message_id });
  draw(tr, ctx, item, integrations, searching);
  return tr;
}

function draw(tr, ctx, item, integrations, searching) {
  const retryMax = integrations.get(item.integration_id)?.retry_policy?.retry_max;
  const retry = item.retry_count ? `retry ${item.retry_count}${retryMax ? ` of ${retryMax}` : ""}` : "—";
  const waiting = item.pipeline_status === "retry_pending";
  const actions = h("div", { class: "actions" });
  const buttons = [];
  // In a tab: reprocess what failed; in search results: whatever no execution runs on.
  const reprocessable = searching ? REPROCESSABLE : new Set(["dead_letter", "error"]);
  if (ctx.can("reprocess") && reprocessable.has(item.pipeline_status)) {
    buttons.push(h("button", { type: "button", "data-action": "reprocess" }, "Reprocess"));
  }
  if (ctx.can("cancel") && CANCELLABLE.has(item.pipeline_status)) {
    buttons.push(h("button", { type: "button", class: "danger", "data-action": "cancel" }, "Cancel"));
  }
  for (const button of buttons) {
    button.addEventListener("click", oneAtATime(buttons, () => act(tr, ctx, item, integrations, searching, button.dataset.action)));
  }
  actions.append(...buttons);
  fill(tr,
    h("td", {}, h("a", { href: `/admin/messages/${item.message_id}`, "data-nav": "" }, h("code", {}, item.message_id)),
      item.external_id ? h("div", { class: "sub" }, item.external_id) : null),
    h("td", {}, item.integration_id || "—"),
    h("td", {}, item.message_type || "—"),
    h("td", {}, statusBadge(item.pipeline_status), item.uncertain ? badge("uncertain", "warning", "uncertain") : null),
    h("td", {}, retry),
    h("td", {}, waiting && item.next_retry_at ? h("time", { datetime: item.next_retry_at, title: item.next_retry_at }, relTime(item.next_retry_at)) : "—"),
    // The API gives an error class only while the message still fails with it.
    h("td", {}, item.last_retry_error_class ? h("code", {}, item.last_retry_error_class) : "—"),
    h("td", {}, timeEl(item.updated_at || item.received_at)),
    searching ? h("td", {}, item.matched_by ? h("code", {}, item.matched_by) : "—") : null,
    h("td", {}, actions));
}

async function act(tr, ctx, item, integrations, searching, action) {
  let answer;
  try {
    answer = action === "reprocess" ? await reprocess(ctx, item) : await cancel(ctx, item);
  } catch (error) {
    toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
    return;
  }
  if (!answer) return;
  // The API answers with the message's queue row (the listing's own shape).
  const updated = { ...item, ...(answer.queue_row || answer) };
  draw(tr, ctx, updated, integrations, searching);
  toast(action === "reprocess" ? `Reprocessing ${item.message_id}` : `Cancelled ${item.message_id}`);
  if (action === "reprocess") follow(tr, ctx, updated, integrations, searching);
}

/** After a reprocess, watch the message until it settles, redrawing its row. */
async function follow(tr, ctx, item, integrations, searching) {
  for (let i = 0; i < 30 && tr.isConnected; i += 1) {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    let view;
    try {
      view = await ctx.api("GET", `/api/admin/messages/${item.message_id}`);
    } catch {
      return;
    }
    if (!tr.isConnected) return;
    draw(tr, ctx, { ...item, ...view }, integrations, searching);
    if (!["received", "mapped", "processing"].includes(view.pipeline_status)) return;
  }
}

/** The tenant's recent bulk jobs with their progress; polls while one runs. Hidden when there
 * is none (or the API has no bulk jobs). */
function jobsPanel(ctx) {
  const list = h("ul", { class: "jobs-list" });
  const element = h("section", { class: "jobs", "aria-labelledby": "jobs-title", hidden: true },
    h("h2", { id: "jobs-title" }, "Bulk jobs"), list);
  let timer = null;
  let shown = new Map();

  async function load() {
    clearTimeout(timer);
    timer = null;
    if (!element.isConnected && shown.size) return;
    let page;
    try {
      page = await ctx.api("GET", "/api/admin/bulk-jobs", { query: { tenant_id: ctx.tenant, limit: 5 } });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 404)) fill(list, h("li", {}, errorBlock(error)));
      return;
    }
    draw(page.items || []);
  }

  function draw(items) {
    shown = new Map(items.map((job) => [job.job_id, job]));
    element.hidden = !items.length;
    fill(list, items.map(jobItem));
    const running = items.some((job) => ["running", "cancelling"].includes(job.state));
    if (running && element.isConnected) {
      timer = setTimeout(() => {
        if (!element.isConnected) return;
        if (document.visibilityState === "visible") load();
        else draw([...shown.values()]); // look again later, without a request
      }, JOBS_POLL_MS);
    }
  }

  function jobItem(job) {
    const settled = job.done + job.skipped + job.failed;
    const level = { running: "info", cancelling: "warning", completed: "ok", cancelled: "muted", failed: "critical" }[job.state] || "muted";
    const cancelButton = ["running"].includes(job.state) && ctx.can(job.action)
      ? h("button", { type: "button", class: "danger", "data-action": "cancel-job" }, "Cancel job") : null;
    if (cancelButton) {
      cancelButton.addEventListener("click", oneAtATime(cancelButton, async () => {
        if (!(await confirmAction(`Stop bulk job ${job.job_id}? Messages it already acted on stay as they are.`, "Stop the job"))) return;
        try {
          const answer = await ctx.api("POST", `/api/admin/bulk-jobs/${encodeURIComponent(job.job_id)}/cancel`, { query: { tenant_id: ctx.tenant } });
          toast(`Job ${job.job_id}: ${answer.state}`);
          await load();
        } catch (error) {
          toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
        }
      }));
    }
    const reasons = (named) => Object.entries(named || {}).map(([reason, n]) => h("span", { class: "chip" }, `${reason}: ${n}`));
    return h("li", { class: "card job", "data-job-id": job.job_id, "data-state": job.state },
      h("div", { class: "row" },
        h("strong", {}, job.action === "reprocess" ? "Reprocess" : "Cancel"), " ", describe(job.filter || {}),
        badge(job.state, level, "job-state"), cancelButton),
      h("progress", { max: String(Math.max(1, job.matched)), value: String(Math.min(settled, Math.max(1, job.matched))), "aria-label": `progress of ${job.job_id}` }),
      h("p", { class: "job-figures" },
        `matched ${job.matched} · done ${job.done} · skipped ${job.skipped} · failed ${job.failed}`),
      job.skipped ? h("p", { class: "hint" }, "Skipped: ", reasons(job.skipped_reasons)) : null,
      job.failed ? h("p", { class: "hint" }, "Failed: ", reasons(job.failed_reasons)) : null,
      h("p", { class: "hint" }, `Started ${relTime(job.created_at)} by ${job.created_by || "?"}; job ${job.job_id}`));
  }

  return {
    element,
    load,
    show(job) {
      draw([job, ...[...shown.values()].filter((j) => j.job_id !== job.job_id)].slice(0, 5));
    },
  };
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

function readRefresh() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(REFRESH_KEY) || "{}");
    return { on: saved.on === true, seconds: PERIODS.includes(saved.seconds) ? saved.seconds : DEFAULT_PERIOD };
  } catch {
    return { on: false, seconds: DEFAULT_PERIOD };
  }
}

function writeRefresh(on, seconds) {
  sessionStorage.setItem(REFRESH_KEY, JSON.stringify({ on, seconds }));
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
