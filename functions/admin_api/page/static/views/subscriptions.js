// /admin/subscriptions: the tenant's outbound webhook subscriptions. Create (the signing secret
// is shown once), enable / disable, rotate the secret (the new one shown once), delete (after a
// confirmation), and per subscription its failed deliveries with Replay (one event) and
// "Replay all since" a time.
import { badge, confirmAction, errorBlock, field, fill, fmtTime, h, listing, timeEl, toast } from "../ui.js";
import { allowed, failure, integrationChoice, integrationIds, onceSlot } from "./access.js";

const PAGE = 50;
const EXAMPLES = "message.*, connection.gone, subscription.disabled, * (everything)";

export async function render(ctx) {
  if (!ctx.tenant) {
    fill(ctx.main, h("h1", {}, "Subscriptions"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  const base = `/api/admin/tenants/${encodeURIComponent(ctx.tenant)}/subscriptions`;
  const configure = allowed(ctx, "configure", "admin");
  const deliveries = allowed(ctx, "manage_deliveries", "operator");
  const ids = configure ? await integrationIds(ctx) : [];
  const once = onceSlot();
  const list = h("div", { class: "listing" });
  const { load, changed } = listing(list, {
    fetchPage: (cursor) => ctx.api("GET", base, { query: { limit: PAGE, cursor } }),
    rowsOf: (subs) => subs.map((sub) => item(sub)),
    frame: (items) => h("ul", { class: "subscriptions", "aria-label": "Subscriptions" }, items),
    holder: "ul.subscriptions",
    empty: "No subscriptions yet.",
  });

  fill(ctx.main,
    h("h1", {}, "Subscriptions"),
    h("p", { class: "hint" }, "Outbound webhooks: the hub signs each event (Standard Webhooks) and retries failed deliveries."),
    once,
    configure ? createForm() : null,
    list);

  function createForm() {
    const url = h("input", { type: "url", name: "url", required: true, autocomplete: "off", placeholder: "https://example.com/hooks/hub" });
    const types = h("input", { type: "text", name: "event_types", required: true, autocomplete: "off", value: "message.*" });
    const description = h("input", { type: "text", name: "description", maxlength: "500", autocomplete: "off" });
    const limit = integrationChoice("Only events of integrations", ids, "sub-integration");
    const submit = h("button", { type: "submit" }, "Create subscription");
    const status = h("div", { "aria-live": "polite" });
    const form = h("form", { class: "card access-form", "aria-label": "New subscription", novalidate: true },
      h("h3", {}, "New subscription"),
      field("Endpoint URL", url, "https (plain http only to 127.0.0.1 or localhost)."),
      field("Event types", types, `Separated by commas or spaces, with wildcards: ${EXAMPLES}.`),
      field("Description", description, "Optional."),
      limit, submit, status);
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      fill(status);
      const body = { url: url.value.trim(), event_types: types.value.split(/[\s,]+/).filter(Boolean) };
      if (description.value.trim()) body.description = description.value.trim();
      const chosen = limit.chosen();
      if (chosen) body.integration_ids = chosen;
      submit.disabled = true;
      try {
        const created = await ctx.api("POST", base, { body });
        once.show(`Signing secret of ${created.subscription_id}`, created.secret,
          "Receivers verify the webhook-signature header with it.");
        form.reset();
        types.value = "message.*";
        toast(`Created subscription ${created.subscription_id}`);
        await load(null);
      } catch (error) {
        fill(status, errorBlock(error));
      } finally {
        submit.disabled = false;
      }
    });
    return form;
  }


  function item(sub) {
    const li = h("li", { class: "card subscription", "data-subscription-id": sub.subscription_id });
    draw(li, sub);
    return li;
  }

  function draw(li, sub) {
    const failures = h("div", { class: "failures", hidden: true });
    const actions = h("div", { class: "actions" });
    if (deliveries) {
      actions.append(sub.enabled
        ? h("button", { type: "button", class: "secondary", "data-action": "disable", onclick: () => setEnabled(li, sub, false) }, "Disable")
        : h("button", { type: "button", "data-action": "enable", onclick: () => setEnabled(li, sub, true) }, "Enable"));
    }
    if (configure) {
      actions.append(
        h("button", { type: "button", class: "secondary", "data-action": "rotate-secret", onclick: () => rotate(li, sub) }, "Rotate secret"),
        h("button", { type: "button", class: "danger", "data-action": "delete", onclick: () => remove(li, sub) }, "Delete"));
    }
    const toggle = h("button", {
      type: "button", class: "secondary", "aria-expanded": "false", "data-action": "failures",
      onclick: () => {
        const open = failures.hidden;
        failures.hidden = !open;
        toggle.setAttribute("aria-expanded", String(open));
        if (open) showFailures(failures, sub);
        else failures.replaceChildren();
      },
    }, "Failed deliveries");
    actions.append(toggle);
    const current = (sub.secrets || []).filter((s) => !s.expires_at || new Date(s.expires_at) > new Date());
    fill(li,
      h("div", { class: "row" },
        h("h2", { class: "sub-url" }, h("code", {}, sub.url)),
        sub.enabled ? badge("enabled", "ok", "enabled") : badge("disabled", "muted", "enabled")),
      h("dl", { class: "entry" },
        h("dt", {}, "Id"), h("dd", {}, h("code", {}, sub.subscription_id)),
        h("dt", {}, "Event types"), h("dd", {}, sub.event_types.map((t) => h("code", { class: "chip" }, t))),
        h("dt", {}, "Integrations"), h("dd", {}, sub.integration_ids ? sub.integration_ids.join(", ") : "all integrations"),
        sub.description ? [h("dt", {}, "Description"), h("dd", {}, sub.description)] : null,
        !sub.enabled && sub.disabled_reason ? [h("dt", {}, "Disabled because"), h("dd", {}, sub.disabled_reason)] : null,
        h("dt", {}, "Signing secrets"), h("dd", {}, `${current.length} current`,
          current.filter((s) => s.expires_at).map((s) => h("div", { class: "sub" }, h("code", {}, s.secret_id), " retires ", timeEl(s.expires_at)))),
        h("dt", {}, "Created"), h("dd", {}, sub.created_at ? fmtTime(sub.created_at) : "—")),
      actions, failures);
  }

  async function setEnabled(li, sub, enabled) {
    changed();
    if (!enabled && !(await confirmAction(`Disable the subscription to ${sub.url}? Events are no longer sent to it until it is enabled again.`, "Disable"))) return;
    await act(li, async () => {
      const updated = await ctx.api("POST", `${base}/${sub.subscription_id}/${enabled ? "enable" : "disable"}`);
      draw(li, updated);
      toast(`${enabled ? "Enabled" : "Disabled"} ${sub.subscription_id}`);
    });
  }

  async function rotate(li, sub) {
    changed();
    if (!(await confirmAction(`Rotate the signing secret of ${sub.url}? A new secret is shown once; the current ones keep signing beside it for 24 h.`, "Rotate secret"))) return;
    await act(li, async () => {
      const rotated = await ctx.api("POST", `${base}/${sub.subscription_id}/rotate-secret`, { body: {} });
      const { secret, ...view } = rotated;
      once.show(`New signing secret of ${sub.subscription_id}`, secret,
        "Deliveries carry a signature with each current secret until the old ones retire.");
      draw(li, view);
      toast(`Rotated the secret of ${sub.subscription_id}`);
    });
  }

  async function remove(li, sub) {
    changed();
    if (!(await confirmAction(`Delete the subscription to ${sub.url}? No more events go to it; this cannot be undone.`, "Delete subscription"))) return;
    await act(li, async () => {
      await ctx.api("DELETE", `${base}/${sub.subscription_id}`, { headers: { "If-Match": `"${sub.version}"` } });
      li.remove();
      toast(`Deleted ${sub.subscription_id}`);
      if (!list.querySelector("li.subscription")) load(null);
    });
  }

  async function showFailures(box, sub) {
    const url = `${base}/${sub.subscription_id}/failed-deliveries`;
    const body = h("div", {});
    fill(box, h("h3", {}, "Failed deliveries"), deliveries && sub.enabled ? sinceForm() : null, body);
    if (deliveries && !sub.enabled) box.insertBefore(h("p", { class: "hint" }, "Enable the subscription to replay its failed deliveries."), body);

    function sinceForm() {
      const since = h("input", { type: "datetime-local", name: "since", required: true });
      const submit = h("button", { type: "submit", class: "secondary" }, "Replay all since");
      const form = h("form", { class: "filters", "aria-label": "Replay failed deliveries since a time" },
        h("label", { for: `since-${sub.subscription_id}` }, "Failed since"), since, submit);
      since.id = `since-${sub.subscription_id}`;
      form.addEventListener("submit", async (event) => {
        event.preventDefault();
        const at = since.value ? new Date(since.value) : null;
        if (!at || Number.isNaN(at.getTime())) {
          toast("Choose the time from which to replay", "critical");
          since.focus();
          return;
        }
        if (!(await confirmAction(`Send again every delivery to ${sub.url} that failed since ${fmtTime(at.toISOString())}?`, "Replay all"))) return;
        submit.disabled = true;
        try {
          const answer = await ctx.api("POST", `${url}/replay`, { body: { since: at.toISOString() } });
          toast(`Replaying ${answer.replayed} deliveries${answer.more ? " (more remain: replay again)" : ""}`);
          await page(null);
        } catch (error) {
          toast(failure(error), "critical");
        } finally {
          submit.disabled = false;
        }
      });
      return form;
    }

    async function page(cursor) {
      let answer;
      try {
        answer = await ctx.api("GET", url, { query: { limit: PAGE, cursor } });
      } catch (error) {
        fill(body, errorBlock(error));
        return;
      }
      const rows = answer.items.map((f) => failureRow(f));
      body.querySelector(".more")?.remove();
      const tbody = cursor ? body.querySelector("tbody") : null;
      if (tbody) tbody.append(...rows);
      else if (!rows.length) fill(body, h("p", { class: "empty" }, "No failed deliveries."));
      else {
        fill(body, h("table", {},
          h("caption", { class: "sr-only" }, `Failed deliveries to ${sub.url}`),
          h("thead", {}, h("tr", {}, ["Event", "Type", "Message", "Failed", "Error", "Attempts", "Replayed", "Actions"].map((c) => h("th", { scope: "col" }, c)))),
          h("tbody", {}, rows)));
      }
      if (answer.next_cursor) body.append(h("button", { type: "button", class: "secondary more", onclick: () => page(answer.next_cursor) }, "Load more"));
    }

    function failureRow(f) {
      const tr = h("tr", { "data-event-id": f.event_id });
      const replay = deliveries && sub.enabled
        ? h("button", { type: "button", class: "secondary", "data-action": "replay", "aria-label": `Replay ${f.event_id}`, onclick: async () => {
          replay.disabled = true;
          try {
            await ctx.api("POST", `${url}/replay`, { body: { event_id: f.event_id } });
            fill(tr.lastElementChild, badge("replaying", "info", "replay"));
            toast(`Replaying ${f.event_id}`);
          } catch (error) {
            toast(failure(error), "critical");
            replay.disabled = false;
          }
        } }, "Replay")
        : null;
      fill(tr,
        h("td", {}, h("code", {}, f.event_id)),
        h("td", {}, f.event_type),
        h("td", {}, f.message_id ? h("a", { href: `/admin/messages/${f.message_id}`, "data-nav": "" }, h("code", {}, f.message_id)) : "—"),
        h("td", {}, timeEl(f.failed_at)),
        h("td", {}, f.error_class ? h("code", {}, f.error_class) : "—", f.dest_status ? ` (${f.dest_status})` : "",
          f.detail ? h("div", { class: "sub" }, f.detail) : null),
        h("td", {}, String(f.attempts ?? "—")),
        h("td", {}, f.replayed_at ? timeEl(f.replayed_at) : "—"),
        h("td", {}, replay));
      return tr;
    }

    await page(null);
  }

  load(null);
}

async function act(el, work) {
  const buttons = [...el.querySelectorAll(":scope > .actions button")];
  for (const button of buttons) button.disabled = true;
  try {
    await work();
  } catch (error) {
    toast(failure(error), "critical");
    for (const button of buttons) button.disabled = false;
  }
}
