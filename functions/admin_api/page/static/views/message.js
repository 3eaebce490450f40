// /admin/messages/<id>: status, destination answer, the uncertain flag and what it means,
// Reprocess / Cancel / Erase (GDPR), a compact timeline (one line per step, event or callback, one expandable
// row per delivery attempt with the status it led to folded in), and the payload and mapped body
// as the API shows them (sensitive fields already masked by the API).
import { ApiError } from "../api.js";
import { CANCELLABLE, REPROCESSABLE, cancel, erase, reprocess } from "../actions.js";
import { badge, errorBlock, fill, fmtTime, h, oneAtATime, statusBadge, timeEl, toast } from "../ui.js";

const UNCERTAIN = "The destination did not answer in time: it may or may not have applied this message. "
  + "A retry carries the same Idempotency-Key, so a destination that honours it applies the message once.";
/** Statuses a reprocess passes through before it settles. */
const MOVING = new Set(["received", "mapped", "processing"]);

export async function render(ctx, { messageId }) {
  const view = await ctx.api("GET", `/api/admin/messages/${messageId}`);
  draw(ctx, view);
}

function draw(ctx, view) {
  const facts = [
    ["Status", statusBadge(view.pipeline_status)],
    ["Integration", view.integration_id],
    ["Message type", view.message_type],
    ["External id", view.external_id || "—"],
    ["Received", h("span", {}, fmtTime(view.received_at), " (", timeEl(view.received_at), ")")],
    ["Last change", h("span", {}, fmtTime(view.updated_at), " (", timeEl(view.updated_at), ")")],
    ["Retries", String(view.retry_count ?? 0)],
    ["Next attempt", view.pipeline_status === "retry_pending" && view.next_retry_at ? h("span", {}, fmtTime(view.next_retry_at), " (", timeEl(view.next_retry_at), ")") : "—"],
    // The API names an error class only while the message still fails with it; an earlier
    // attempt's stays in that attempt, in the timeline.
    ["Failing with", view.last_retry_error_class ? h("code", {}, view.last_retry_error_class) : "—"],
    ["dest_status", view.dest_status ?? "—"],
    ["dest_status_text", view.dest_status_text ?? "—"],
    ["Delivery status", view.delivery_status ? h("span", {}, view.delivery_status, " ", timeEl(view.delivery_status_at)) : "—"],
    ["Held", view.held_reason ? badge(`held: ${view.held_reason} on ${view.held_on}`, "warning", "held") : "—"],
    ["Execution", view.execution_id ? h("code", {}, view.execution_id) : "—"],
    // Its retention (issue 29): deleted then, with its callbacks.
    ["Kept until", view.kept_until ? fmtTime(view.kept_until) : "—"],
  ];
  fill(ctx.main,
    h("p", {}, h("a", { href: "/admin/queue", "data-nav": "" }, "← Queue")),
    h("h1", { class: "message-title" }, "Message ", h("code", {}, view.message_id)),
    view.uncertain ? h("div", { class: "callout warning", role: "note" },
      badge("Uncertain outcome", "warning", "uncertain"), " ", view.uncertain_meaning || UNCERTAIN) : null,
    actions(ctx, view),
    h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    h("h2", {}, "Timeline"),
    view.timeline_complete === false
      ? h("p", { class: "hint" }, "Only the latest entries are kept: the first steps of this message dropped off.") : null,
    timeline(view),
    h("h2", {}, "Payload"),
    view.payload_purged
      ? h("p", { class: "callout", role: "note", "data-part": "payload" },
        "Purged: this message's payload is no longer kept (the tenant's payload retention). Its status and timeline stay.")
      : [
        h("p", { class: "hint" }, "Sensitive fields of this message type are masked."),
        h("pre", { class: "payload", "data-part": "payload" }, pretty(view.payload)),
      ],
    view.mapped ? [
      h("h2", {}, "Mapped body"),
      h("p", { class: "hint" }, view.mapped.mapped
        ? `What the current mapping makes of the payload (${view.mapped.content_type}); sensitive fields masked.`
        : "No mapping: the payload is delivered as it is."),
      view.mapped.ok
        ? h("pre", { class: "payload", "data-part": "mapped" }, pretty(view.mapped.body))
        : errorBlock(view.mapped.error || {}),
    ] : null,
  );
}

/** Reprocess / Cancel / Erase, as the status and the token's role allow. */
function actions(ctx, view) {
  const buttons = [];
  if (ctx.can("reprocess") && REPROCESSABLE.has(view.pipeline_status)) {
    buttons.push(h("button", { type: "button", "data-action": "reprocess" }, "Reprocess"));
  }
  if (ctx.can("cancel") && CANCELLABLE.has(view.pipeline_status)) {
    buttons.push(h("button", { type: "button", class: "danger", "data-action": "cancel" }, "Cancel"));
  }
  if (ctx.can("erase")) {
    buttons.push(h("button", { type: "button", class: "danger", "data-action": "erase" }, "Erase (GDPR)"));
  }
  if (!buttons.length) return null;
  for (const button of buttons) {
    button.addEventListener("click", oneAtATime(buttons, () => act(ctx, view, button.dataset.action)));
  }
  return h("div", { class: "actions message-actions", "aria-label": "Actions" }, buttons);
}

const MOVES = { reprocess, cancel, erase };

async function act(ctx, view, action) {
  let answer;
  try {
    answer = await MOVES[action](ctx, view);
  } catch (error) {
    toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
    return;
  }
  if (!answer) return;
  if (action === "erase") {
    toast(`Erased ${view.message_id}`);
    ctx.navigate("/admin/queue");
    return;
  }
  toast(action === "reprocess" ? `Reprocessing ${view.message_id}` : `Cancelled ${view.message_id}`);
  await follow(ctx, view.message_id);
}

/** Redraws the view until the message settles (a reprocess runs for a moment). */
async function follow(ctx, messageId) {
  const main = ctx.main;
  const here = location.pathname;
  for (let i = 0; i < 30; i += 1) {
    let view;
    try {
      view = await ctx.api("GET", `/api/admin/messages/${messageId}`);
    } catch {
      return;
    }
    if (location.pathname !== here || !main.isConnected) return;
    draw(ctx, view);
    if (!MOVING.has(view.pipeline_status)) return;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
}

/** The compact timeline: a status event recorded with a step (same time) is folded into that
 * step's line as "→ status"; each delivery attempt is one line that expands to its request,
 * the destination's answer class, status code, duration and answer text. */
function timeline(view) {
  const entries = Array.isArray(view.timeline) ? view.timeline : legacy(view);
  if (!entries.length) return h("p", { class: "empty" }, "Nothing recorded yet.");
  const lines = [];
  for (const entry of entries) {
    const last = lines[lines.length - 1];
    if (entry.kind === "event" && last && last.entry.at === entry.at && ["attempt", "step", "audit"].includes(last.entry.kind)) {
      last.events.push(entry);
    } else {
      lines.push({ entry, events: [] });
    }
  }
  return h("ol", { class: "timeline compact" }, lines.map(({ entry, events }) => (entry.kind === "attempt"
    ? attemptLine(view, entry, events)
    : plainLine(entry, events))));
}

function when(entry) {
  return h("time", { datetime: entry.at, title: entry.at }, fmtTime(entry.at));
}

function outcome(events) {
  return events.map((event) => h("span", { class: "then", "data-event-id": event.event_id }, "→ ", statusBadge(event.status)));
}

function plainLine(entry, events) {
  const text = entry.kind === "event"
    ? `${String(entry.status || "").replaceAll("_", " ")} (${entry.type})`
    : entry.kind === "audit" && entry.actor ? `${entry.title} (${entry.actor})` : entry.title || entry.event || entry.step || "";
  const detail = entry.kind === "callback" ? entry.detail : entry.kind === "step" ? entry.detail : null;
  return h("li", { "data-kind": entry.kind || "log" },
    h("div", { class: "line" }, when(entry), badge(kindLabel(entry), kindLevel(entry), "kind"),
      h("span", { class: "what" }, text), detail ? h("span", { class: "sub" }, String(detail)) : null, outcome(events)));
}

function attemptLine(view, entry, events) {
  const number = entry.number ?? (Number(entry.attempt || 0) + 1);
  const accepted = entry.answer_class === "accepted" || entry.step === "sent";
  const answerClass = entry.answer_class || entry.error_class || (accepted ? "accepted" : "failed");
  const request = entry.request;
  const facts = [
    ["Request", request ? requestText(request) : "—"],
    request && request.idempotency_key ? ["Idempotency-Key", h("code", {}, request.idempotency_key)] : null,
    request && request.correlation_id ? ["X-Correlation-Id", h("code", {}, request.correlation_id)] : null,
    ["Answer class", h("code", {}, answerClass)],
    ["Status code", entry.dest_status ?? "— (no answer)"],
    ["Duration", entry.duration_ms !== undefined ? `${entry.duration_ms} ms` : "—"],
    entry.detail ? ["Destination's answer", h("span", { class: "answer-text" }, String(entry.detail))] : null,
    entry.uncertain ? ["Uncertain", "yes: the request was sent, its outcome is unknown"] : null,
    ...events.map((event) => ["Event", h("span", {}, h("code", {}, event.event_id), ` ${event.type}`)]),
  ].filter(Boolean);
  return h("li", { "data-kind": "attempt", "data-attempt": String(number) },
    h("details", {},
      h("summary", { class: "line" }, when(entry),
        badge(accepted ? "accepted" : answerClass, accepted ? "ok" : "critical", "answer"),
        h("span", { class: "what" }, `Delivery attempt ${number}`),
        h("span", { class: "figures" }, [entry.dest_status, entry.duration_ms !== undefined ? `${entry.duration_ms} ms` : null].filter((x) => x !== null && x !== undefined).join(" · ")),
        outcome(events)),
      h("dl", { class: "entry" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
      request ? h("p", { class: "hint" }, "Where: the destination as configured now; the body: the mapped body below.") : null));
}

function requestText(request) {
  if (request.protocol === "soap") {
    return `SOAP ${request.operation || ""} to ${request.host}${request.connection_id ? ` (connection ${request.connection_id})` : ""}`;
  }
  return `${request.method || "POST"} to ${request.host}${request.connection_id ? ` (connection ${request.connection_id})` : ""}`;
}

/** Without a timeline in the answer: the log and the callbacks, oldest first. */
function legacy(view) {
  const log = (view.log || []).map((entry) => ({ ...entry, at: entry.at || entry.timestamp, kind: entry.step ? "step" : "log", title: entry.step ? `${entry.step}: ${entry.status}` : entry.event }));
  const callbacks = (view.callbacks || []).map((entry) => ({ ...entry, at: entry.received_at || entry.at, kind: "callback", title: `callback: ${entry.status}` }));
  return [...log, ...callbacks].sort((a, b) => String(a.at).localeCompare(String(b.at)));
}

function kindLabel(entry) {
  return { event: "event", step: "step", audit: "operator", callback: "callback" }[entry.kind] || entry.kind || "log";
}

function kindLevel(entry) {
  if (entry.kind === "audit") return "warning";
  const text = JSON.stringify(entry);
  if (/dead_letter|"error"|failed|failure|rejected|expired/.test(text)) return "critical";
  if (/retry|uncertain|held/.test(text)) return "warning";
  return "info";
}

function pretty(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}
