// /admin/integrations: one card per integration of the tenant, with the badges the API computes
// (READ-ONLY, certificate expiry, Paused, Circuit open, Connection gone: text and level as given,
// no threshold is decided here), and what the role allows: Edit, Pause/Resume the connection,
// Test connection, and a link to the queue filtered by the integration. Cursor-paginated.
import { ApiError } from "../api.js";
import { badge, confirmAction, errorBlock, fill, fmtTime, h, timeEl, toast } from "../ui.js";

const PAGE = 24;

/** Whether the role may take `action`; `fallback` names the older action that implied it. */
export function allowed(ctx, action, fallback) {
  const can = (ctx.me && ctx.me.can) || {};
  return action in can ? Boolean(can[action]) : Boolean(fallback && can[fallback]);
}

export async function render(ctx) {
  if (!ctx.tenant) {
    fill(ctx.main, h("h1", {}, "Integrations"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  const tenant = ctx.tenant;
  const grid = h("div", { class: "grid int-cards", id: "integration-cards" });
  const more = h("div", {});
  const header = h("div", { class: "int-head" },
    h("h1", {}, "Integrations"),
    ctx.can("configure")
      ? h("a", { href: "/admin/integrations/new", "data-nav": "", class: "button", "data-action": "new" }, "New integration")
      : null);
  fill(ctx.main, header, grid, more);

  let loaded = 0;

  async function load(cursor, { until = 0 } = {}) {
    let page;
    try {
      page = await ctx.api("GET", `/api/admin/tenants/${encodeURIComponent(tenant)}/integration-cards`, {
        query: { limit: PAGE, cursor },
      });
    } catch (error) {
      if (error instanceof ApiError && error.status === 401) return;
      fill(more, errorBlock(error));
      return;
    }
    if (!cursor) grid.replaceChildren();
    grid.append(...page.items.map((item) => card(ctx, item, refresh)));
    loaded = grid.children.length;
    fill(more);
    if (!loaded) {
      fill(grid, h("p", { class: "empty" }, "No integrations yet."));
      return;
    }
    if (page.next_cursor && loaded < until) {
      await load(page.next_cursor, { until });
      return;
    }
    if (page.next_cursor) {
      more.append(h("button", { type: "button", class: "secondary more", onclick: () => load(page.next_cursor) }, "Load more"));
    }
  }

  /** After an action: the cards again (as many as were shown), badges as the API computes them;
   * the focus goes back to the same button of the same card. */
  async function refresh(integrationId, action) {
    await load(null, { until: loaded });
    const again = grid.querySelector(`[data-integration-id="${CSS.escape(integrationId)}"] [data-action="${action}"]`)
      || grid.querySelector(`[data-integration-id="${CSS.escape(integrationId)}"] [data-action]`);
    if (again) again.focus();
  }

  await load(null);
}

function card(ctx, item, refresh) {
  const id = item.integration_id;
  const headingId = `card-${id}`.replace(/[^A-Za-z0-9_-]/g, "-");
  const result = h("div", { class: "int-result", "aria-live": "polite", "data-part": "test-result" });
  const state = item.connection_state || {};
  const actions = h("div", { class: "actions" });
  if (ctx.can("configure")) {
    actions.append(h("a", {
      href: `/admin/integrations/${encodeURIComponent(id)}/edit`, "data-nav": "", class: "button",
      "data-action": "edit", "aria-describedby": headingId,
    }, "Edit"));
  }
  if (item.connection_id && ctx.can("pause")) {
    const paused = Boolean(state.paused);
    actions.append(h("button", {
      type: "button", class: paused ? "" : "secondary", "data-action": paused ? "resume" : "pause",
      "aria-describedby": headingId,
      onclick: (event) => pauseOrResume(ctx, item, !paused, event.currentTarget, refresh),
    }, paused ? "Resume" : "Pause"));
  }
  if (item.connection_id && allowed(ctx, "test_connection", "pause")) {
    actions.append(h("button", {
      type: "button", class: "secondary", "data-action": "test", "aria-describedby": headingId,
      onclick: (event) => testConnection(ctx, item, event.currentTarget, result),
    }, "Test connection"));
  }
  actions.append(h("a", {
    href: `/admin/queue?integration_id=${encodeURIComponent(id)}`, "data-nav": "", class: "button secondary",
    "data-action": "queue", "aria-describedby": headingId,
  }, "Queue"));

  const badges = Array.isArray(item.badges) ? item.badges : [];
  const cert = item.certificate;
  const facts = [
    ["Mode", item.mode || "—"],
    ["Destination", [item.platform, item.protocol].filter(Boolean).join(" · ") || "none"],
    ["Connection", item.connection_id
      ? h("span", {}, item.connection_name || "", item.connection_name ? " " : "", h("code", {}, item.connection_id),
        item.connection_found === false ? " (not found)" : "")
      : (item.destination === "embedded" ? "embedded" : "—")],
    cert ? ["Certificate", h("span", { title: cert.subject || undefined }, `until ${fmtTime(cert.not_after)}`)] : null,
    item.connection_state ? ["Circuit", String(state.circuit || "—").replaceAll("_", " ")] : null,
    ["Message types", (item.message_types || []).join(", ") || "—"],
    ["Last received", item.last_received_at ? timeEl(item.last_received_at) : "never"],
  ].filter(Boolean);

  return h("article", { class: "card int-card", "data-integration-id": id, "aria-labelledby": headingId },
    h("h2", { id: headingId }, item.name || id),
    h("p", { class: "sub" }, h("code", {}, id)),
    h("div", { class: "badges", "aria-label": "Status" },
      badges.map((b) => badge(b.text, b.level, b.kind))),
    h("dl", { class: "int-facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    actions,
    result);
}

async function pauseOrResume(ctx, item, pause, button, refresh) {
  const connection = item.connection_id;
  const question = pause
    ? `Pause connection ${connection}? Deliveries through it wait (retry_pending, held) until it is resumed; every integration using it is affected.`
    : `Resume connection ${connection}? Its held messages are released at a bounded rate.`;
  if (!(await confirmAction(question, pause ? "Pause connection" : "Resume connection"))) {
    button.focus();
    return;
  }
  button.disabled = true;
  try {
    await ctx.api("POST", `/api/admin/connections/${encodeURIComponent(connection)}/${pause ? "pause" : "resume"}?tenant_id=${encodeURIComponent(ctx.tenant)}`);
    toast(pause ? `Paused ${connection}` : `Resumed ${connection}`);
    await refresh(item.integration_id, pause ? "resume" : "pause");
  } catch (error) {
    toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
    button.disabled = false;
  }
}

/** Shows what the one harmless call reported: ok, or the error class a delivery would get. */
export async function testConnection(ctx, { connection_id: connection }, button, result) {
  button.disabled = true;
  fill(result, h("p", { class: "loading", "aria-busy": "true" }, `Testing ${connection}…`));
  try {
    const answer = await ctx.api("POST",
      `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/connections/${encodeURIComponent(connection)}/test`);
    fill(result, testOutcome(answer));
  } catch (error) {
    fill(result, errorBlock(error));
  } finally {
    button.disabled = false;
  }
}

export function testOutcome(answer) {
  const status = answer.dest_status ? ` (status ${answer.dest_status})` : "";
  return h("p", { class: "test-outcome", "data-ok": String(Boolean(answer.ok)) },
    answer.ok ? badge("Connection OK", "ok", "test") : badge("Connection failed", "critical", "test"),
    " ",
    answer.error_class ? h("code", { "data-part": "error-class" }, answer.error_class) : null,
    status,
    answer.detail ? h("span", { class: "sub" }, ` — ${answer.detail}`) : null);
}
