// /admin/messages/<id>: status, destination answer, the uncertain flag and what it means, a
// timeline of steps, attempts, status callbacks and outbox events, and the payload and mapped
// body as the API shows them (sensitive fields already masked by the API).
import { badge, errorBlock, fill, fmtTime, h, statusBadge, timeEl } from "../ui.js";

const UNCERTAIN = "The destination did not answer in time: it may or may not have applied this message. "
  + "A retry carries the same Idempotency-Key, so a destination that honours it applies the message once.";

export async function render(ctx, { messageId }) {
  const view = await ctx.api("GET", `/api/admin/messages/${messageId}`);
  const facts = [
    ["Status", statusBadge(view.pipeline_status)],
    ["Integration", view.integration_id],
    ["Message type", view.message_type],
    ["External id", view.external_id || "—"],
    ["Received", h("span", {}, fmtTime(view.received_at), " (", timeEl(view.received_at), ")")],
    ["Last change", h("span", {}, fmtTime(view.updated_at), " (", timeEl(view.updated_at), ")")],
    ["Retries", String(view.retry_count ?? 0)],
    ["Next attempt", view.pipeline_status === "retry_pending" && view.next_retry_at ? h("span", {}, fmtTime(view.next_retry_at), " (", timeEl(view.next_retry_at), ")") : "—"],
    ["Last error class", view.last_retry_error_class ? h("code", {}, view.last_retry_error_class) : "—"],
    ["dest_status", view.dest_status ?? "—"],
    ["dest_status_text", view.dest_status_text ?? "—"],
    ["Delivery status", view.delivery_status ? h("span", {}, view.delivery_status, " ", timeEl(view.delivery_status_at)) : "—"],
    ["Held", view.held_reason ? badge(`held: ${view.held_reason} on ${view.held_on}`, "warning", "held") : "—"],
    ["Execution", view.execution_id ? h("code", {}, view.execution_id) : "—"],
  ];
  fill(ctx.main,
    h("p", {}, h("a", { href: "/admin/queue", "data-nav": "" }, "← Queue")),
    h("h1", {}, "Message ", h("code", {}, view.message_id)),
    view.uncertain ? h("div", { class: "callout warning", role: "note" },
      badge("Uncertain outcome", "warning", "uncertain"), " ", view.uncertain_meaning || UNCERTAIN) : null,
    h("dl", { class: "facts" }, facts.map(([term, value]) => [h("dt", {}, term), h("dd", {}, value)])),
    h("h2", {}, "Timeline"),
    timeline(view),
    h("h2", {}, "Payload"),
    h("p", { class: "hint" }, "Sensitive fields of this message type are masked."),
    h("pre", { class: "payload", "data-part": "payload" }, pretty(view.payload)),
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

function timeline(view) {
  const entries = Array.isArray(view.timeline) ? view.timeline : legacy(view);
  if (!entries.length) return h("p", { class: "empty" }, "Nothing recorded yet.");
  return h("ol", { class: "timeline" }, entries.map((entry) => h("li", { "data-kind": entry.kind || "log" },
    h("time", { datetime: entry.at, title: entry.at }, fmtTime(entry.at)),
    " ", badge(entry.kind || "log", kindLevel(entry), "kind"), " ",
    h("strong", {}, entry.title || entry.event || entry.step || entry.status || ""),
    details(entry))));
}

/** Without a timeline in the answer: the log and the callbacks, oldest first. */
function legacy(view) {
  const log = (view.log || []).map((entry) => ({ ...entry, at: entry.at || entry.timestamp, kind: entry.step ? "step" : "log" }));
  const callbacks = (view.callbacks || []).map((entry) => ({ ...entry, at: entry.received_at || entry.at, kind: "callback", title: `callback: ${entry.status}` }));
  return [...log, ...callbacks].sort((a, b) => String(a.at).localeCompare(String(b.at)));
}

const HIDDEN = new Set(["at", "kind", "title"]);

function details(entry) {
  const rest = Object.entries(entry).filter(([key, value]) => !HIDDEN.has(key) && value !== null && value !== undefined && value !== "");
  if (!rest.length) return null;
  return h("dl", { class: "entry" }, rest.map(([key, value]) => [h("dt", {}, key), h("dd", {}, typeof value === "object" ? JSON.stringify(value) : String(value))]));
}

function kindLevel(entry) {
  const text = JSON.stringify(entry);
  if (/dead_letter|"error"|failed|rejected|expired/.test(text)) return "critical";
  if (/retry|uncertain|held/.test(text)) return "warning";
  return "info";
}

function pretty(value) {
  if (value === null || value === undefined) return "—";
  return typeof value === "string" ? value : JSON.stringify(value, null, 2);
}
