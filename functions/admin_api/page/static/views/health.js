// /admin/health: per lane the work queue, its DLQ (with Redrive) and the age of its oldest
// message; pending outbox / webhook deliveries; the selected tenant's integrations by the state
// their messages are in now; signature failures and duplicates dropped; the platform's events per
// hour (inline SVG, with the same figures as a table).
import { ApiError } from "../api.js";
import { badge, confirmAction, errorBlock, fill, fmtTime, h, table, toast } from "../ui.js";

const SERIES = [
  ["received", "Received", "#1f4e79", ""],
  ["sent", "Sent", "#166534", ""],
  ["retry_scheduled", "Retry scheduled", "#a16207", "6 3"],
  ["failed", "Failed attempts", "#b91c1c", "2 3"],
  ["dead_lettered", "Dead-lettered", "#7f1d1d", "8 3 2 3"],
  ["observed", "Observed", "#6d28d9", "1 2"],
];

export async function render(ctx) {
  const answer = await ctx.api("GET", "/api/admin/health", { query: { tenant_id: ctx.tenant } });
  fill(ctx.main,
    h("h1", {}, "Health"),
    h("p", { class: "hint" }, `As of ${fmtTime(answer.generated_at)}; rates over the last ${Math.round(answer.window_seconds / 60)} min.`),
    (answer.unavailable || []).length
      ? h("div", { class: "callout warning", role: "note" }, `Not available right now: ${answer.unavailable.join(", ")}.`) : null,
    answer.lanes ? lanes(ctx, answer) : null,
    answer.outbox ? outbox(answer.outbox) : null,
    answer.counters ? counters(answer.counters) : null,
    integrations(answer.integrations),
    answer.hourly ? hourly(answer.hourly) : null,
  );
}

function lanes(ctx, answer) {
  return [
    h("h2", {}, "Lanes"),
    table("Pipeline lanes", [
      { label: "Lane", cell: (l) => h("strong", {}, l.lane) },
      { label: "Waiting", cell: (l) => String(l.queue.visible) },
      { label: "In flight", cell: (l) => String(l.queue.in_flight) },
      { label: "Delayed", cell: (l) => String(l.queue.delayed) },
      { label: "Oldest message", cell: (l) => age(l.oldest_message_age_seconds) },
      { label: "DLQ depth", cell: (l) => l.dlq_depth ? badge(`${l.dlq_depth} in DLQ`, "critical", "dlq") : badge("DLQ empty", "ok", "dlq") },
      { label: "Actions", cell: (l) => (l.redrivable && l.dlq_depth && ctx.can("redrive"))
        ? h("button", { type: "button", "data-action": "redrive", onclick: () => redrive(ctx, l) }, `Redrive ${l.lane}`) : "—" },
    ], answer.lanes, { rowAttrs: (l) => ({ "data-lane": l.lane }) }),
  ];
}

async function redrive(ctx, lane) {
  const sure = await confirmAction(
    `Move the ${lane.dlq_depth} step message(s) of the ${lane.lane} DLQ back to its queue? Do it once the cause is fixed.`,
    "Redrive");
  if (!sure) return;
  try {
    const moved = await ctx.api("POST", `/api/admin/dlq/${encodeURIComponent(lane.lane)}/redrive`);
    toast(`Moved ${moved.moved} message(s) back to ${lane.lane}`);
    await render(ctx);
  } catch (error) {
    toast(error instanceof ApiError ? `${error.code}: ${error.message}` : String(error), "critical");
  }
}

function outbox(figures) {
  return [
    h("h2", {}, "Outbox and webhooks"),
    h("dl", { class: "facts" },
      h("dt", {}, "Webhook deliveries pending"), h("dd", {}, String(figures.pending_webhook_deliveries)),
      h("dt", {}, "Publisher batches given up (DLQ)"),
      h("dd", {}, figures.publisher_dlq_depth ? badge(`${figures.publisher_dlq_depth} in DLQ`, "critical", "dlq") : badge("none", "ok", "dlq"))),
  ];
}

function counters(figures) {
  return [
    h("h2", {}, "Last hour (platform)"),
    h("dl", { class: "facts" },
      h("dt", {}, "Signature failures"), h("dd", {}, String(figures.signature_failures)),
      h("dt", {}, "Duplicates dropped"), h("dd", {}, String(figures.duplicates_dropped))),
  ];
}

// The table and the chart below count different things, and say so: the table counts messages
// by the state they are in NOW (one message, one state; a message that failed and was then sent
// counts nowhere); the chart counts EVENTS per hour over the whole platform (every retry
// scheduled, every failed attempt, every dead-lettering, whatever became of the message since).
function integrations(section) {
  if (!section) return null;
  return [
    h("h2", { id: "integrations-title" }, `Integrations of ${section.tenant_id}: messages in each state now`),
    h("p", { class: "hint", id: "integrations-meaning" },
      "Each message counts once, in the state it is in now. “Within 1 h”: messages in that state now whose "
      + "last change was in the last hour. A message that failed and was then sent or reprocessed counts in "
      + "none of these columns. The chart below counts events instead, over the whole platform, per clock hour."),
    section.truncated ? h("p", { class: "hint" }, "Many messages: the figures below are lower bounds.") : null,
    table("Messages per integration by their current state", [
      { label: "Integration", cell: (i) => h("a", { href: `/admin/queue?integration_id=${encodeURIComponent(i.integration_id)}`, "data-nav": "" }, i.integration_id) },
      { label: "Waiting now · failed within 1 h", cell: (i) => String(i.retries) },
      { label: "Failed for good now · within 1 h", cell: (i) => i.permanent_failures ? badge(`${i.permanent_failures} failed`, "critical", "failures") : "0" },
      { label: "In error now · within 1 h", cell: (i) => String(i.errors) },
      { label: "Dead-lettered now · within 1 h", cell: (i) => String(i.dead_lettered) },
      { label: "Waiting now · any age", cell: (i) => String(i.waiting) },
      { label: "Oldest waiting", cell: (i) => age(i.oldest_waiting_age_seconds) },
    ], section.items, { empty: "No integration has a waiting or failed message now.", rowAttrs: (i) => ({ "data-integration-id": i.integration_id }) }),
  ];
}

function hourly(hours) {
  const width = 960;
  const height = 220;
  const pad = { left: 40, right: 10, top: 10, bottom: 30 };
  const max = Math.max(1, ...hours.flatMap((hour) => SERIES.map(([key]) => hour[key] || 0)));
  const x = (i) => pad.left + (i * (width - pad.left - pad.right)) / Math.max(1, hours.length - 1);
  const y = (value) => height - pad.bottom - (value * (height - pad.top - pad.bottom)) / max;
  const svg = h("svg", {
    class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", width: "100%",
    "aria-label": "Events per hour over the whole platform, last 24 hours (the table below the legend has the figures)",
  },
  h("line", { x1: pad.left, y1: y(0), x2: width - pad.right, y2: y(0), stroke: "#5b6470" }),
  h("text", { x: 4, y: y(max) + 4, "font-size": "11", fill: "#5b6470" }, String(max)),
  h("text", { x: 4, y: y(0) + 4, "font-size": "11", fill: "#5b6470" }, "0"),
  hours.map((hour, i) => (i % 3 === 0
    ? h("text", { x: x(i), y: height - 10, "font-size": "11", "text-anchor": "middle", fill: "#5b6470" }, new Date(hour.hour).toISOString().slice(11, 13) + "h")
    : null)),
  SERIES.map(([key, label, colour, dash]) => h("polyline", {
    fill: "none", stroke: colour, "stroke-width": "2", "stroke-dasharray": dash || undefined,
    points: hours.map((hour, i) => `${x(i).toFixed(1)},${y(hour[key] || 0).toFixed(1)}`).join(" "),
    "data-series": key,
  }, h("title", {}, label))));
  const legend = h("ul", { class: "legend", "aria-label": "Legend" }, SERIES.map(([key, label, colour, dash]) => h("li", {},
    h("svg", { width: "28", height: "10", "aria-hidden": "true" },
      h("line", { x1: 0, y1: 5, x2: 28, y2: 5, stroke: colour, "stroke-width": "3", "stroke-dasharray": dash || undefined })),
    " ", label, ": ", String(hours.reduce((sum, hour) => sum + (hour[key] || 0), 0)), " in 24 h")));
  return [
    h("h2", { id: "hourly-title" }, "Events per hour, whole platform (all tenants), last 24 h"),
    h("p", { class: "hint", id: "hourly-meaning" },
      "Counts what happened, not what is: every message received, every delivery sent, every retry scheduled, "
      + "every failed attempt and every dead-lettering, for all tenants, including messages that have moved on since "
      + "(a message retried three times then sent is 3 retries scheduled and 1 sent here). "
      + "The legend's totals are over the 24 hours; the table above counts messages by their state now."),
    svg, legend,
    h("details", {}, h("summary", {}, "Figures per hour (events)"),
      table("Events per hour, whole platform", [
        { label: "Hour (UTC)", cell: (hour) => fmtTime(hour.hour) },
        ...SERIES.map(([key, label]) => ({ label, cell: (hour) => String(hour[key] || 0) })),
      ], [...hours].reverse())),
  ];
}

function age(seconds) {
  if (seconds === null || seconds === undefined) return "—";
  if (seconds < 60) return `${Math.round(seconds)} s`;
  if (seconds < 3600) return `${Math.round(seconds / 60)} min`;
  if (seconds < 86400) return `${(seconds / 3600).toFixed(1)} h`;
  return `${(seconds / 86400).toFixed(1)} d`;
}
