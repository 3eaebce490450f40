// Small DOM helpers. Text always goes in as text (textContent), never as HTML: whatever a
// partner or a destination wrote cannot become markup here.

/** h("button", {class: "x", onclick: f}, "Label", child...) -> an element. */
export function h(tag, attrs = {}, ...children) {
  const el = tag === "svg" || SVG_TAGS.has(tag)
    ? document.createElementNS("http://www.w3.org/2000/svg", tag)
    : document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else if (value === true) {
      el.setAttribute(key, "");
    } else {
      el.setAttribute(key, String(value));
    }
  }
  append(el, children);
  return el;
}

const SVG_TAGS = new Set(["rect", "g", "text", "line", "title", "path", "polyline"]);

function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** Replaces an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

/** A badge: text always carries the meaning; the level only adds colour. */
export function badge(text, level = "info", kind = "") {
  return h("span", { class: `badge badge-${level}`, "data-badge": kind || undefined }, text);
}

export function statusBadge(status) {
  const level = {
    sent: "ok", received_observed: "info", observed: "info", retry_pending: "warning",
    error: "critical", dead_letter: "critical", cancelled: "muted",
  }[status] || "muted";
  return badge(String(status || "unknown").replaceAll("_", " "), level, "status");
}

/** "in 3 min", "2 h ago" (with the exact time as a tooltip). */
export function relTime(iso) {
  if (!iso) return "—";
  const then = new Date(iso);
  if (Number.isNaN(then.getTime())) return String(iso);
  const seconds = Math.round((then.getTime() - Date.now()) / 1000);
  const abs = Math.abs(seconds);
  const [value, unit] = abs < 60 ? [abs, "s"] : abs < 3600 ? [Math.round(abs / 60), "min"]
    : abs < 86400 ? [Math.round(abs / 3600), "h"] : [Math.round(abs / 86400), "d"];
  return seconds >= 0 ? `in ${value} ${unit}` : `${value} ${unit} ago`;
}

export function timeEl(iso) {
  return h("time", { datetime: iso || undefined, title: iso || undefined }, relTime(iso));
}

export function fmtTime(iso) {
  if (!iso) return "—";
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
}

/** A table with a caption; `columns`: [{label, cell: row => node|text}]. */
export function table(caption, columns, rows, { empty = "Nothing here.", rowAttrs } = {}) {
  if (!rows.length) return h("p", { class: "empty" }, empty);
  return h("table", {},
    h("caption", { class: "sr-only" }, caption),
    h("thead", {}, h("tr", {}, columns.map((c) => h("th", { scope: "col" }, c.label)))),
    h("tbody", {}, rows.map((row) => h("tr", rowAttrs ? rowAttrs(row) : {}, columns.map((c) => h("td", {}, c.cell(row)))))),
  );
}

/** Shows a message for a few seconds in the live region. */
export function toast(text, level = "ok") {
  const box = document.getElementById("toasts");
  const item = h("div", { class: `toast toast-${level}` }, text);
  box.append(item);
  setTimeout(() => item.remove(), level === "critical" ? 10000 : 5000);
}

/** Asks before a consequential action; resolves true when confirmed. While a question is open,
 * another one (a second click behind the dialog) is answered "no" at once. */
export function confirmAction(text, label = "Confirm", title = "Are you sure?") {
  const dialog = document.getElementById("confirm");
  if (dialog.open) return Promise.resolve(false);
  document.getElementById("confirm-title").textContent = title;
  document.getElementById("confirm-text").textContent = text;
  const yes = document.getElementById("confirm-yes");
  const no = document.getElementById("confirm-no");
  yes.textContent = label;
  return new Promise((resolve) => {
    const done = (answer) => {
      yes.removeEventListener("click", onYes);
      no.removeEventListener("click", onNo);
      dialog.removeEventListener("cancel", onNo);
      dialog.close();
      resolve(answer);
    };
    const onYes = () => done(true);
    const onNo = () => done(false);
    yes.addEventListener("click", onYes);
    no.addEventListener("click", onNo);
    dialog.addEventListener("cancel", onNo);
    dialog.showModal();
    no.focus();
  });
}

/** Runs one user action at a time: while `run()` is in flight (its confirmation included) the
 * `buttons` are disabled and another call does nothing, so a double click is one action. */
export function oneAtATime(buttons, run) {
  let busy = false;
  return async (...args) => {
    if (busy) return undefined;
    busy = true;
    const list = (Array.isArray(buttons) ? buttons : [buttons]).filter(Boolean);
    for (const button of list) button.disabled = true;
    try {
      return await run(...args);
    } finally {
      busy = false;
      for (const button of list) if (button.isConnected) button.disabled = false;
    }
  };
}

/** A wide table in its own horizontal scroll container (the page itself never scrolls sideways). */
export function scroller(content, label) {
  return h("div", { class: "scroller", role: "region", "aria-label": label, tabindex: "0" }, content);
}

/** A secret shown once, with a copy button. */
export function secretOnce(label, secret) {
  const code = h("code", { class: "secret", "data-secret": "" }, secret);
  const copy = h("button", {
    type: "button", class: "secondary",
    onclick: async () => {
      try {
        await navigator.clipboard.writeText(secret);
        copy.textContent = "Copied";
      } catch {
        const range = document.createRange();
        range.selectNodeContents(code);
        getSelection().removeAllRanges();
        getSelection().addRange(range);
        copy.textContent = "Selected: press Ctrl+C";
      }
    },
  }, "Copy");
  return h("div", { class: "once", role: "alert" },
    h("p", {}, h("strong", {}, label), " — shown once: copy it now, it cannot be shown again."),
    h("div", { class: "row" }, code, copy));
}

/** An error from the API as a visible, readable block. */
export function errorBlock(error) {
  const code = error && error.code ? error.code : "error";
  return h("div", { class: "error", role: "alert" },
    h("strong", {}, code.replaceAll("_", " ")), ": ", error && error.message ? error.message : String(error));
}

export function field(label, control, hint) {
  const id = control.id || `f-${Math.random().toString(36).slice(2, 9)}`;
  control.id = id;
  return h("div", { class: "field" },
    h("label", { for: id }, label), control, hint ? h("p", { class: "hint", id: `${id}-hint` }, hint) : null);
}

/** A cursor-paginated listing drawn into `box`: `fetchPage(cursor)` answers {items, next_cursor},
 * `rowsOf(items)` makes their elements, `frame(rows)` the element holding the first page (later
 * pages append to its `holder` element), "Load more" fetches the next. An answer overtaken by a
 * newer load, or by `changed()` (a change made on the page since it was asked), is dropped. */
export function listing(box, { fetchPage, rowsOf, frame, holder, empty }) {
  let current = 0;
  async function load(cursor = null) {
    const ticket = cursor ? current : ++current;
    let page;
    try {
      page = await fetchPage(cursor);
    } catch (error) {
      if (ticket === current) fill(box, errorBlock(error));
      return;
    }
    if (ticket !== current) return;
    const rows = rowsOf(page.items);
    box.querySelector(".more")?.remove();
    const into = cursor ? box.querySelector(holder) : null;
    if (into) into.append(...rows);
    else if (!rows.length) fill(box, h("p", { class: "empty" }, empty));
    else fill(box, frame(rows));
    if (page.next_cursor) {
      box.append(h("button", { type: "button", class: "secondary more", onclick: () => load(page.next_cursor) }, "Load more"));
    }
  }
  return { load, changed() { current += 1; } };
}
