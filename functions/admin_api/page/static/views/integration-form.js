// /admin/integrations/new and /admin/integrations/<id>/edit: the integration form (seed 000,
// "Plataforma SEFAZ"). Name, id (create only), mode, the connection (an existing one of the
// tenant, or a new one made here: platform SEFAZ locks the protocol to SOAP 1.2 and asks for
// the A1 certificate, uploaded before the connection is saved, as the API requires), the retry
// policy (hidden in observability mode: nothing is delivered, so nothing is retried), message
// types with their rules as JSON (checked in the browser) and a Preview of a sample payload.
// Edits are PUT with If-Match (the ETag of the GET). API errors show beside the form, with the
// fields they name marked invalid.
import { ApiError } from "../api.js";
import { errorBlock, field, fill, h, toast } from "../ui.js";
import { allowed, testConnection } from "./integrations.js";

export const SEFAZ_HINT = "SEFAZ requires mTLS — attach the A1 digital certificate (.pfx/.p12)";
/** What the page proposes for a SEFAZ connection (hub.domain.delivery_limits.SEFAZ_PRESET):
 * SEFAZ blocks an emitter that calls too often ("consumo indevido"). */
const SEFAZ_LIMITS = { max_concurrency: 1, rate_per_second: 1, burst: 1 };

/** NF-e 4.00 status service (nfelib ships the WSDL): what a new SEFAZ connection starts with. */
const SEFAZ_SOAP = {
  wsdl: "nfelib:nfe/wsdl/v4_0/nfestatusservico4.wsdl",
  binding: "{http://www.portalfiscal.inf.br/nfe/wsdl/NFeStatusServico4}NFeStatusServico4Soap12",
  operation: "nfeStatusServicoNF",
};
const NEW_TYPE = { duplicate_key_fields: [], duplicate_handling: "accept", mapping: null, sensitive_fields: [] };
const SAMPLE = { po_number: "PO-1001", lines: [{ sku: "A-1", qty: 2 }] };
/** What the API sets: never sent back (it ignores them anyway). */
const READ_ONLY = ["version", "connection_gone_at", "last_received_at", "integration_id", "tenant_id"];

let uid = 0;
const nextId = (prefix) => `${prefix}-${(uid += 1)}`;

export async function render(ctx, { integrationId }) {
  const creating = !integrationId;
  const back = h("p", {}, h("a", { href: "/admin/integrations", "data-nav": "" }, "← Integrations"));
  if (!ctx.tenant) {
    fill(ctx.main, back, h("h1", {}, "Integration"), h("p", { class: "empty" }, "No tenant yet."));
    return;
  }
  if (!ctx.can("configure")) {
    fill(ctx.main, back, h("h1", {}, creating ? "New integration" : `Integration ${integrationId}`),
      h("p", { class: "callout warning", role: "note" },
        `Your role (${ctx.me.role}) cannot change integrations; ask an admin.`));
    return;
  }
  const tenant = ctx.tenant;
  const base = `/api/admin/tenants/${encodeURIComponent(tenant)}`;
  const [current, connections] = await Promise.all([
    creating ? null : ctx.api("GET", `${base}/integrations/${encodeURIComponent(integrationId)}`),
    listConnections(ctx, base),
  ]);
  const form = new IntegrationForm(ctx, base, current, connections);
  fill(ctx.main, back, h("h1", {}, creating ? "New integration" : "Edit integration ", creating ? null : h("code", {}, integrationId)), form.element);
  form.focusFirst();
}

async function listConnections(ctx, base) {
  const found = [];
  let cursor = null;
  do {
    const page = await ctx.api("GET", `${base}/connections`, { query: { limit: 100, cursor } });
    found.push(...page.items);
    cursor = page.next_cursor;
  } while (cursor && found.length < 1000);
  return found;
}

/** A connection id the page picks for a new connection: its certificate is uploaded under it
 * before the connection exists (`con_` + 26 characters, as the API generates them). */
function newConnectionId() {
  const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
  const bytes = crypto.getRandomValues(new Uint8Array(26));
  return `con_${[...bytes].map((b) => alphabet[b % 32]).join("")}`;
}

/** The file's bytes as base64 (FileReader: the data URL without its prefix). */
function readBase64(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ""));
    reader.onerror = () => reject(reader.error || new Error("the file could not be read"));
    reader.readAsDataURL(file);
  });
}

/** An error thrown by the page itself, shaped like the API's (code, message, details.field). */
function localError(code, message, fieldName) {
  return new ApiError(0, code, message, fieldName ? [{ field: fieldName, problem: code, message }] : undefined);
}

function radios(name, legend, options, selected, onChange) {
  const inputs = options.map(([value, label, hint]) => {
    const id = nextId(`${name}-${value}`);
    const input = h("input", { type: "radio", name, value, id, checked: value === selected, onchange: onChange });
    return [input, h("div", { class: "choice" }, input, h("label", { for: id }, label), hint ? h("span", { class: "hint" }, ` — ${hint}`) : null)];
  });
  const set = h("fieldset", { class: "int-radios" }, h("legend", {}, legend), inputs.map(([, row]) => row));
  return { set, value: () => inputs.map(([i]) => i).find((i) => i.checked)?.value, inputs: inputs.map(([i]) => i) };
}

function text(attrs = {}) { return h("input", { type: "text", autocomplete: "off", spellcheck: "false", ...attrs }); }
function num(attrs = {}) { return h("input", { type: "number", ...attrs }); }
function checkbox(label, checked, attrs = {}) {
  const input = h("input", { type: "checkbox", id: nextId("cb"), checked, ...attrs });
  return { input, row: h("div", { class: "choice" }, input, h("label", { for: input.id }, label)) };
}
function options(values, selected) {
  return values.map(([value, label]) => h("option", { value, selected: value === selected }, label));
}

class IntegrationForm {
  constructor(ctx, base, current, connections) {
    this.ctx = ctx;
    this.base = base;
    this.current = current;
    this.etag = current ? current.etag : null;
    this.connections = connections;
    /** API field path -> the control that edits it (longest prefix wins). */
    this.controls = new Map();
    this.status = h("div", { class: "int-status", id: nextId("status"), tabindex: "-1" });
    this.element = this.build();
    this.sync();
  }

  build() {
    const c = this.current || {};
    // --- general ----------------------------------------------------------------------------
    this.name = text({ name: "name", required: true, maxlength: 200, value: c.name || "" });
    this.idInput = this.current ? null : text({ name: "integration_id", pattern: "[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}", placeholder: "generated when empty (int_…)" });
    this.mode = radios("mode", "Mode", [
      ["observability", "Observability", "everything runs but the delivery (READ-ONLY)"],
      ["orchestration", "Orchestration", "messages are delivered to the connection"],
    ], c.mode || "observability", () => this.sync());
    this.controls.set("name", this.name);
    if (this.idInput) this.controls.set("integration_id", this.idInput);
    this.controls.set("mode", this.mode.inputs[0]);
    const general = h("fieldset", { class: "card int-section" }, h("legend", {}, "Integration"),
      field("Name", this.name),
      this.idInput ? field("Integration id", this.idInput, "Letters, digits and _ . : - ; cannot change later.") : null,
      this.mode.set);

    // --- connection -------------------------------------------------------------------------
    const embedded = Boolean(this.current && !c.connection_id && c.destination);
    const choices = [
      ["existing", "An existing connection"],
      ["new", "A new connection"],
      embedded ? ["embedded", "Keep the embedded destination"] : ["none", "None yet", "observability needs no destination"],
    ];
    // An edit shows what is saved; a new integration starts on the tenant's first connection.
    const saved = c.connection_id ? "existing" : embedded ? "embedded" : "none";
    const initial = this.current ? saved : this.connections.length ? "existing" : "new";
    this.connChoice = radios("connection-choice", "Deliver through", choices, initial, () => this.sync());
    this.connSelect = h("select", { name: "connection_id" },
      this.connections.map((conn) => h("option", { value: conn.connection_id, selected: conn.connection_id === c.connection_id },
        `${conn.name ? `${conn.name} — ` : ""}${conn.connection_id} (${conn.platform}, ${conn.protocol})`)));
    if (c.connection_id && !this.connections.some((conn) => conn.connection_id === c.connection_id)) {
      this.connSelect.prepend(h("option", { value: c.connection_id, selected: true }, `${c.connection_id} (not found)`));
    }
    this.controls.set("connection_id", this.connSelect);
    this.testButton = h("button", { type: "button", class: "secondary", "data-action": "test-connection", onclick: () => this.test() }, "Test connection");
    this.testResult = h("div", { "aria-live": "polite", "data-part": "test-result" });
    this.existingPart = h("div", { class: "int-sub" },
      field("Connection", this.connSelect),
      allowed(this.ctx, "test_connection", "pause") ? h("div", { class: "row" }, this.testButton) : null,
      this.testResult);
    this.newPart = this.buildNewConnection();
    const connection = h("fieldset", { class: "card int-section" }, h("legend", {}, "Connection"),
      this.connChoice.set, this.existingPart, this.newPart);

    // --- retry policy -----------------------------------------------------------------------
    const r = c.retry_policy || {};
    this.retry = {
      retry_auto_enabled: checkbox("Retry automatically", Boolean(r.retry_auto_enabled), { name: "retry_auto_enabled" }),
      retry_max: num({ name: "retry_max", min: 0, max: 100, step: 1, value: r.retry_max ?? 5 }),
      backoff_base_seconds: num({ name: "backoff_base_seconds", min: 1, step: "any", value: r.backoff_base_seconds ?? 30 }),
      backoff_factor: num({ name: "backoff_factor", min: 1, step: "any", value: r.backoff_factor ?? 2 }),
      backoff_cap_seconds: num({ name: "backoff_cap_seconds", min: 1, step: "any", value: r.backoff_cap_seconds ?? 3600 }),
      retry_max_age_seconds: num({ name: "retry_max_age_seconds", min: 1, step: "any", value: r.retry_max_age_seconds ?? 86400 }),
      ladder_seconds: text({ name: "ladder_seconds", placeholder: "e.g. 30, 120, 600", value: (r.ladder_seconds || []).join(", ") }),
      retry_dead_letter: checkbox("Dead-letter when retries run out (else: error)", r.retry_dead_letter ?? true, { name: "retry_dead_letter" }),
    };
    for (const [key, control] of Object.entries(this.retry)) this.controls.set(`retry_policy.${key}`, control.input || control);
    this.controls.set("retry_policy", this.retry.retry_max);
    this.retrySection = h("fieldset", { class: "card int-section", id: "retry-policy", "data-part": "retry-policy" },
      h("legend", {}, "Retry policy"),
      this.retry.retry_auto_enabled.row,
      h("div", { class: "int-columns" },
        field("Retries at most", this.retry.retry_max),
        field("First delay (s)", this.retry.backoff_base_seconds),
        field("Backoff factor", this.retry.backoff_factor),
        field("Longest delay (s)", this.retry.backoff_cap_seconds),
        field("No retry after (s from reception)", this.retry.retry_max_age_seconds)),
      field("Fixed ladder of delays (s)", this.retry.ladder_seconds, "Comma-separated, increasing; the last repeats. Empty: exponential backoff."),
      this.retry.retry_dead_letter.row);
    this.retryNote = h("p", { class: "hint", "data-part": "retry-hidden" },
      "Retry policy: not used in observability mode (nothing is delivered, so nothing is retried). Switch to orchestration to set it.");

    // --- message types ----------------------------------------------------------------------
    this.types = h("div", { class: "int-types" });
    this.typeRows = [];
    for (const [name, config] of Object.entries(c.message_types || {})) this.addType(name, config);
    const types = h("fieldset", { class: "card int-section" }, h("legend", {}, "Message types"),
      h("p", { class: "hint" }, "Each type's rules as JSON: duplicate_key_fields, duplicate_handling (accept | reject | overwrite), mapping (or null: sent as received), sensitive_fields."),
      this.types,
      h("button", { type: "button", class: "secondary", "data-action": "add-type", onclick: () => this.addType("", NEW_TYPE, true) }, "Add message type"));

    // --- submit -----------------------------------------------------------------------------
    this.save = h("button", { type: "submit", "data-action": "save" }, this.current ? "Save changes" : "Create integration");
    const form = h("form", { class: "int-form", novalidate: true, "aria-describedby": this.status.id },
      this.status, general, connection, this.retryNote, this.retrySection, types,
      h("div", { class: "actions" }, this.save,
        h("a", { href: "/admin/integrations", "data-nav": "", class: "button secondary" }, "Cancel")));
    form.addEventListener("submit", (event) => { event.preventDefault(); this.submit(); });
    return form;
  }

  buildNewConnection() {
    this.conn = {
      connection_id: text({ name: "new_connection_id", pattern: "[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}", placeholder: "generated when empty (con_…)" }),
      name: text({ name: "connection_name", maxlength: 200 }),
      platform: h("select", { name: "platform" }, options([["generic", "Generic"], ["sefaz", "SEFAZ (NF-e)"]], "generic")),
      protocol: h("select", { name: "protocol" }, options([["http", "HTTP (REST)"], ["soap", "SOAP"]], "http")),
      url: h("input", { type: "url", name: "url", placeholder: "https://…", autocomplete: "off" }),
      method: h("select", { name: "method" }, options(["POST", "PUT", "PATCH", "GET", "DELETE"].map((m) => [m, m]), "POST")),
      auth: h("select", { name: "auth_kind" }, options([["none", "None"], ["bearer", "Bearer token"], ["basic", "Basic"], ["api_key", "API key header"]], "none")),
      token: h("input", { type: "password", name: "auth_token", autocomplete: "off" }),
      username: text({ name: "auth_username" }),
      password: h("input", { type: "password", name: "auth_password", autocomplete: "off" }),
      header_name: text({ name: "auth_header_name", value: "X-Api-Key" }),
      api_key: h("input", { type: "password", name: "auth_api_key", autocomplete: "off" }),
      wsdl: text({ name: "soap_wsdl", placeholder: "nfelib:… or https://…?wsdl" }),
      binding: text({ name: "soap_binding", placeholder: "{namespace}Binding (empty: the WSDL's first)" }),
      operation: text({ name: "soap_operation" }),
      soap_version: h("select", { name: "soap_version" }, options([["1.1", "1.1"], ["1.2", "1.2"]], "1.1")),
      mtls: checkbox("Present a client certificate (mTLS)", false, { name: "use_client_certificate" }),
      pfx: h("input", { type: "file", name: "certificate", accept: ".pfx,.p12,application/x-pkcs12" }),
      pfx_password: h("input", { type: "password", name: "certificate_password", autocomplete: "off" }),
      // What the destination can take (issue 30); empty: unlimited.
      max_concurrency: num({ name: "max_concurrency", min: 1, max: 1000, step: 1, placeholder: "unlimited" }),
      rate_per_second: num({ name: "rate_per_second", min: 0.01, max: 1000, step: "any", placeholder: "unlimited" }),
      burst: num({ name: "burst", min: 1, max: 1000, step: 1, placeholder: "the rate, rounded up" }),
    };
    const k = this.conn;
    for (const control of [k.platform, k.protocol, k.auth]) control.addEventListener("change", () => this.sync(control));
    k.mtls.input.addEventListener("change", () => this.sync());
    for (const [api, control] of [["connection_id", k.connection_id], ["name", k.name], ["platform", k.platform],
      ["protocol", k.protocol], ["url", k.url], ["method", k.method], ["auth", k.auth], ["auth.token", k.token],
      ["auth.username", k.username], ["auth.password", k.password], ["auth.header_name", k.header_name],
      ["auth.api_key", k.api_key], ["soap", k.wsdl], ["soap.wsdl", k.wsdl], ["soap.binding", k.binding],
      ["soap.operation", k.operation], ["soap.soap_version", k.soap_version], ["use_client_certificate", k.pfx],
      ["client_certificate_id", k.pfx], ["certificate", k.pfx], ["password", k.pfx_password],
      ["limits", k.max_concurrency], ["limits.max_concurrency", k.max_concurrency],
      ["limits.rate_per_second", k.rate_per_second], ["limits.burst", k.burst]]) {
      this.controls.set(`connection.${api}`, control);
    }
    this.authParts = {
      bearer: field("Token", k.token, "Write-only: never shown again."),
      basic: h("div", {}, field("Username", k.username), field("Password", k.password)),
      api_key: h("div", {}, field("Header", k.header_name), field("API key", k.api_key)),
    };
    this.httpPart = h("div", {}, field("Method", k.method), field("Authentication", k.auth),
      this.authParts.bearer, this.authParts.basic, this.authParts.api_key);
    this.soapPart = h("div", { "data-part": "soap" }, field("WSDL", k.wsdl), field("Binding", k.binding),
      field("Operation", k.operation), field("SOAP version", k.soap_version));
    this.sefazHint = h("p", { class: "callout warning", "data-part": "sefaz-hint", role: "note" }, SEFAZ_HINT);
    this.certPart = h("div", { class: "int-sub", "data-part": "certificate" }, this.sefazHint,
      field("A1 certificate (.pfx/.p12)", k.pfx, "Read in this browser and uploaded before the connection is saved; never shown again."),
      field("Certificate password", k.pfx_password));
    this.mtlsRow = k.mtls.row;
    const preset = h("button", { type: "button", class: "secondary", "data-action": "sefaz-limits",
      onclick: () => this.fillLimits(SEFAZ_LIMITS) }, "SEFAZ preset (1 at a time, 1/s)");
    this.limitsPart = h("fieldset", { class: "int-sub", "data-part": "limits" },
      h("legend", {}, "Delivery limits"),
      h("p", { class: "hint" }, "What the destination can take. Over a limit a message waits (retry_pending, rate_limited or concurrency_limited) without spending an attempt, and goes in arrival order as capacity frees. Empty: unlimited."),
      h("div", { class: "int-columns" },
        field("In flight at most", k.max_concurrency),
        field("Requests per second", k.rate_per_second),
        field("Burst", k.burst)),
      h("div", { class: "row" }, preset));
    return h("div", { class: "int-sub", "data-part": "new-connection" },
      field("Connection id", k.connection_id, "The client certificate is stored under it."),
      field("Connection name", k.name),
      field("Platform", k.platform),
      field("Protocol", k.protocol),
      field("URL", k.url),
      this.httpPart, this.soapPart, this.mtlsRow, this.certPart, this.limitsPart);
  }

  fillLimits(limits) {
    const k = this.conn;
    k.max_concurrency.value = limits.max_concurrency ?? "";
    k.rate_per_second.value = limits.rate_per_second ?? "";
    k.burst.value = limits.burst ?? "";
  }

  /** The new connection's limits as the API takes them, or null (unlimited). */
  limits() {
    const k = this.conn;
    const number = (control) => (control.value.trim() === "" ? null : Number(control.value));
    const limits = {
      max_concurrency: number(k.max_concurrency),
      rate_per_second: number(k.rate_per_second),
      burst: number(k.burst),
    };
    return Object.values(limits).some((value) => value !== null) ? limits : null;
  }

  addType(name, config, focus = false) {
    const rowId = nextId("type");
    const typeName = text({ name: "message_type", value: name, pattern: "[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}", placeholder: "e.g. purchase_order" });
    const rules = h("textarea", { name: "message_type_config", rows: 8, spellcheck: "false", "data-part": "config" }, JSON.stringify(config ?? NEW_TYPE, null, 2));
    const problem = h("p", { class: "int-invalid", id: `${rowId}-problem`, "aria-live": "polite" });
    const sample = h("textarea", { name: "sample_payload", rows: 5, spellcheck: "false", "data-part": "sample" }, JSON.stringify(SAMPLE, null, 2));
    const output = h("div", { class: "int-preview", "data-part": "preview", "aria-live": "polite" });
    const preview = h("button", { type: "button", class: "secondary", "data-action": "preview" }, "Preview");
    const row = { typeName, rules, problem, sample, output, preview };
    const remove = h("button", { type: "button", class: "secondary", "data-action": "remove-type",
      onclick: () => {
        this.typeRows = this.typeRows.filter((r) => r !== row);
        box.remove();
      } }, "Remove");
    rules.setAttribute("aria-describedby", problem.id);
    rules.addEventListener("input", () => this.checkRules(row));
    preview.addEventListener("click", () => this.preview(row));
    const box = h("div", { class: "int-type", "data-message-type": name || "" },
      h("div", { class: "row" }, field("Message type", typeName), remove),
      field("Rules (JSON)", rules), problem,
      h("details", { class: "int-preview-box", open: true },
        h("summary", {}, "Preview the mapping on a sample payload"),
        field("Sample payload (JSON, or XML text)", sample),
        h("div", { class: "row" }, preview),
        output));
    typeName.addEventListener("input", () => { box.dataset.messageType = typeName.value.trim(); });
    row.box = box;
    this.typeRows.push(row);
    this.types.append(box);
    if (focus) typeName.focus();
  }

  /** The rules of a row as an object, or null with the problem shown beside the textarea. */
  checkRules(row) {
    const where = row.typeName.value.trim() || "this message type";
    let parsed;
    try {
      parsed = JSON.parse(row.rules.value);
    } catch (error) {
      return this.badRules(row, `Rules of ${where} are not valid JSON: ${error.message}`);
    }
    if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
      return this.badRules(row, `Rules of ${where} must be a JSON object ({…}).`);
    }
    row.rules.removeAttribute("aria-invalid");
    fill(row.problem);
    return parsed;
  }

  badRules(row, message) {
    row.rules.setAttribute("aria-invalid", "true");
    fill(row.problem, message);
    return null;
  }

  sync(changed) {
    const k = this.conn;
    const orchestration = this.mode.value() === "orchestration";
    this.retrySection.hidden = !orchestration;
    this.retryNote.hidden = orchestration;
    const choice = this.connChoice.value();
    this.existingPart.hidden = choice !== "existing";
    this.newPart.hidden = choice !== "new";
    this.testButton.disabled = !this.connSelect.value;
    const sefaz = k.platform.value === "sefaz";
    if (sefaz) {
      // SEFAZ is SOAP 1.2 with mTLS: the protocol is locked; the NF-e status service is the start.
      k.protocol.value = "soap";
      k.soap_version.value = "1.2";
      if (changed === k.platform) {
        if (!this.limits()) this.fillLimits(SEFAZ_LIMITS);
        if (!k.wsdl.value) k.wsdl.value = SEFAZ_SOAP.wsdl;
        if (!k.binding.value) k.binding.value = SEFAZ_SOAP.binding;
        if (!k.operation.value) k.operation.value = SEFAZ_SOAP.operation;
      }
    }
    k.protocol.disabled = sefaz;
    k.soap_version.disabled = sefaz;
    k.protocol.title = sefaz ? "SEFAZ uses SOAP 1.2" : "";
    const soap = k.protocol.value === "soap";
    this.soapPart.hidden = !soap;
    this.httpPart.hidden = soap;
    for (const [kind, part] of Object.entries(this.authParts)) part.hidden = soap || k.auth.value !== kind;
    this.mtlsRow.hidden = sefaz;
    this.sefazHint.hidden = !sefaz;
    this.certPart.hidden = !(sefaz || k.mtls.input.checked);
    k.pfx.required = !this.certPart.hidden;
  }

  focusFirst() { this.name.focus(); }

  // --- the body -------------------------------------------------------------------------------

  retryPolicy() {
    const r = this.retry;
    const number = (key) => {
      const value = r[key].value.trim();
      return value === "" ? undefined : Number(value);
    };
    const ladderText = r.ladder_seconds.value.trim();
    const ladder = ladderText ? ladderText.split(/[\s,;]+/).filter(Boolean).map(Number) : null;
    if (ladder && ladder.some((n) => !Number.isFinite(n))) {
      throw localError("validation_error", "the ladder takes numbers of seconds, comma-separated", "retry_policy.ladder_seconds");
    }
    const policy = {
      retry_auto_enabled: r.retry_auto_enabled.input.checked,
      retry_max: number("retry_max"),
      backoff_base_seconds: number("backoff_base_seconds"),
      backoff_factor: number("backoff_factor"),
      backoff_cap_seconds: number("backoff_cap_seconds"),
      retry_max_age_seconds: number("retry_max_age_seconds"),
      retry_dead_letter: r.retry_dead_letter.input.checked,
      ladder_seconds: ladder,
    };
    return Object.fromEntries(Object.entries(policy).filter(([, v]) => v !== undefined));
  }

  messageTypes() {
    const types = {};
    let bad = null;
    for (const row of this.typeRows) {
      const name = row.typeName.value.trim();
      const rules = this.checkRules(row);
      if (!name) {
        row.typeName.setAttribute("aria-invalid", "true");
        bad = bad || localError("validation_error", "give each message type a name", null);
        bad.control = bad.control || row.typeName;
        continue;
      }
      if (rules === null) {
        bad = bad || localError("invalid_json", row.problem.textContent, null);
        bad.control = bad.control || row.rules;
        continue;
      }
      if (name in types) {
        row.typeName.setAttribute("aria-invalid", "true");
        bad = bad || localError("validation_error", `message type ${name} is listed twice`, null);
        bad.control = bad.control || row.typeName;
        continue;
      }
      types[name] = rules;
      this.controls.set(`message_types.${name}`, row.rules);
    }
    if (bad) throw bad;
    return types;
  }

  integrationBody(connectionId) {
    const body = {};
    if (this.current) {
      // What this form does not edit (inbound webhook, unknown types, an embedded destination,
      // masked secrets) goes back as read: the API keeps a secret sent back masked.
      for (const [key, value] of Object.entries(this.current)) if (!READ_ONLY.includes(key)) body[key] = value;
    } else if (this.idInput.value.trim()) {
      body.integration_id = this.idInput.value.trim();
    }
    body.name = this.name.value.trim();
    body.mode = this.mode.value();
    body.retry_policy = this.retryPolicy();
    body.message_types = this.messageTypes();
    const choice = this.connChoice.value();
    if (choice === "embedded") return body;
    // Through a connection, or none yet: never an embedded copy of one (a read view may carry
    // the connection resolved into `destination`).
    body.connection_id = connectionId || null;
    body.destination = null;
    return body;
  }

  connectionSpec(connectionId) {
    const k = this.conn;
    const platform = k.platform.value;
    const protocol = k.protocol.value;
    const spec = {
      connection_id: connectionId,
      platform,
      protocol,
      url: k.url.value.trim(),
      use_client_certificate: platform === "sefaz" || k.mtls.input.checked,
    };
    if (k.name.value.trim()) spec.name = k.name.value.trim();
    const limits = this.limits();
    if (limits) spec.limits = limits;
    if (protocol === "soap") {
      spec.method = "POST";
      spec.soap = { wsdl: k.wsdl.value.trim(), operation: k.operation.value.trim(), soap_version: k.soap_version.value };
      if (k.binding.value.trim()) spec.soap.binding = k.binding.value.trim();
    } else {
      spec.method = k.method.value;
      const kind = k.auth.value;
      const auth = { kind };
      if (kind === "bearer") auth.token = k.token.value;
      if (kind === "basic") Object.assign(auth, { username: k.username.value, password: k.password.value });
      if (kind === "api_key") Object.assign(auth, { header_name: k.header_name.value.trim(), api_key: k.api_key.value });
      spec.auth = auth;
    }
    return spec;
  }

  // --- actions --------------------------------------------------------------------------------

  async submit() {
    this.clearMarks();
    fill(this.status);
    let step = "integration";
    this.save.disabled = true;
    this.save.setAttribute("aria-busy", "true");
    try {
      if (!this.name.value.trim()) throw localError("validation_error", "the integration needs a name", "name");
      this.messageTypes(); // checked before anything is written
      this.retryPolicy();
      let connectionId = null;
      const choice = this.connChoice.value();
      if (choice === "existing") {
        connectionId = this.connSelect.value || null;
        if (!connectionId) throw localError("validation_error", "pick a connection, or create a new one", "connection_id");
      } else if (choice === "new") {
        step = "connection";
        connectionId = await this.createConnection();
      }
      step = "integration";
      const body = this.integrationBody(connectionId);
      const saved = this.current
        ? await this.ctx.api("PUT", `${this.base}/integrations/${encodeURIComponent(this.current.integration_id)}`, {
          body, headers: this.etag ? { "If-Match": this.etag } : {},
        })
        : await this.ctx.api("POST", `${this.base}/integrations`, { body });
      toast(`Saved ${saved.integration_id}`);
      this.ctx.navigate("/admin/integrations");
    } catch (error) {
      this.fail(error, step);
    } finally {
      this.save.disabled = false;
      this.save.removeAttribute("aria-busy");
    }
  }

  /** The certificate first (the connection refuses mTLS without one), then the connection; the
   * form then names the connection as existing, so saving again does not create it twice. */
  async createConnection() {
    const k = this.conn;
    const connectionId = k.connection_id.value.trim() || newConnectionId();
    const spec = this.connectionSpec(connectionId);
    if (!spec.url) throw localError("validation_error", "the connection needs a URL", "url");
    if (spec.use_client_certificate) {
      const file = k.pfx.files && k.pfx.files[0];
      if (!file) throw localError("certificate_required", SEFAZ_HINT, "certificate");
      let pkcs12;
      try {
        pkcs12 = await readBase64(file);
      } catch (error) {
        throw localError("certificate_unreadable", `the file could not be read: ${error.message}`, "certificate");
      }
      try {
        await this.ctx.api("POST", `/api/admin/connections/${encodeURIComponent(connectionId)}/certificate`, {
          body: { tenant_id: this.ctx.tenant, pkcs12_base64: pkcs12, password: k.pfx_password.value },
        });
      } catch (error) {
        if (error instanceof ApiError) {
          error.step = "certificate";
          error.control = error.code === "certificate_password_invalid" ? k.pfx_password : k.pfx;
        }
        throw error;
      }
    }
    const created = await this.ctx.api("POST", `${this.base}/connections`, { body: spec });
    this.connections.push(created);
    this.connSelect.append(h("option", { value: created.connection_id, selected: true },
      `${created.name ? `${created.name} — ` : ""}${created.connection_id} (${created.platform}, ${created.protocol})`));
    this.connSelect.value = created.connection_id;
    this.connChoice.inputs.find((i) => i.value === "existing").checked = true;
    this.sync();
    toast(`Created connection ${created.connection_id}`);
    return created.connection_id;
  }

  async test() {
    const connection = this.connSelect.value;
    if (!connection) return;
    await testConnection(this.ctx, { connection_id: connection }, this.testButton, this.testResult);
  }

  async preview(row) {
    const where = row.typeName.value.trim();
    const config = this.checkRules(row);
    if (!where) {
      fill(row.output, errorBlock({ code: "validation_error", message: "name the message type first" }));
      row.typeName.focus();
      return;
    }
    if (config === null) {
      fill(row.output, errorBlock({ code: "invalid_json", message: row.problem.textContent }));
      row.rules.focus();
      return;
    }
    const raw = row.sample.value.trim();
    let payload = raw;
    if (!raw.startsWith("<")) {
      try {
        payload = JSON.parse(raw);
      } catch (error) {
        row.sample.setAttribute("aria-invalid", "true");
        fill(row.output, errorBlock({ code: "invalid_json", message: `the sample payload is not valid JSON: ${error.message}` }));
        return;
      }
    }
    row.sample.removeAttribute("aria-invalid");
    row.preview.disabled = true;
    fill(row.output, h("p", { class: "loading", "aria-busy": "true" }, "Running the mapping…"));
    try {
      // The rules as the form holds them (unsaved): under the saved integration when editing,
      // at the tenant's preview when the integration does not exist yet.
      const path = this.current
        ? `${this.base}/integrations/${encodeURIComponent(this.current.integration_id)}/message-types/${encodeURIComponent(where)}/preview`
        : `${this.base}/mapping-preview`;
      const answer = await this.ctx.api("POST", path, { body: { payload, config } });
      fill(row.output, previewOutcome(answer));
    } catch (error) {
      fill(row.output, errorBlock(error));
    } finally {
      row.preview.disabled = false;
    }
  }

  // --- errors ---------------------------------------------------------------------------------

  clearMarks() {
    for (const control of this.element.querySelectorAll("[aria-invalid]")) {
      if (control.name === "message_type_config") continue; // kept in step with its JSON
      control.removeAttribute("aria-invalid");
    }
  }

  fail(error, step) {
    if (error instanceof ApiError && error.status === 401) return;
    const where = error.step === "certificate" ? "Certificate" : step === "connection" ? "Connection" : "Integration";
    const id = nextId("error");
    const block = errorBlock(error);
    block.id = id;
    fill(this.status, h("p", { class: "int-step" }, `${where} not saved.`), block, fieldList(error));
    const marked = this.mark(error, step, id);
    if (marked && !marked.closest("[hidden]")) marked.focus();
    else this.status.focus();
  }

  /** Marks the controls the error names invalid; returns the first one. */
  mark(error, step, describedBy) {
    const controls = [];
    if (error.control) controls.push(error.control);
    if (error.step !== "certificate") {
      for (const name of fieldsOf(error)) {
        const control = this.controlFor(step === "connection" ? `connection.${name}` : name);
        if (control) controls.push(control);
      }
    }
    for (const control of controls) {
      control.setAttribute("aria-invalid", "true");
      control.setAttribute("aria-errormessage", describedBy);
    }
    return controls[0] || null;
  }

  controlFor(path) {
    let best = null;
    for (const [key, control] of this.controls) {
      if ((path === key || path.startsWith(`${key}.`)) && (!best || key.length > best[0].length)) best = [key, control];
    }
    return best ? best[1] : null;
  }
}

/** The field names an error's details carry: [{field}] (validation), {field} (one), or the
 * keys of {integration_id: ...} / {connection_id: ...} (a conflict naming what is taken). */
function fieldsOf(error) {
  const details = error && error.details;
  if (Array.isArray(details)) return details.map((d) => d && d.field).filter(Boolean);
  if (details && typeof details === "object") return details.field ? [details.field] : Object.keys(details);
  return [];
}

function fieldList(error) {
  const details = error && error.details;
  if (!Array.isArray(details) || !details.length) return null;
  return h("ul", { class: "int-problems" }, details.filter((d) => d && d.field).map((d) =>
    h("li", {}, h("code", {}, d.field), `: ${d.message || d.problem || "invalid"}`)));
}

function previewOutcome(answer) {
  if (!answer.ok) {
    return h("div", {}, errorBlock(answer.error || { code: "mapping_error", message: "the mapping failed" }),
      duplicateKey(answer.duplicate_key));
  }
  let body = answer.body;
  if (/json/.test(answer.content_type || "")) {
    try { body = JSON.stringify(JSON.parse(body), null, 2); } catch { /* shown as sent */ }
  }
  return h("div", {},
    h("p", { class: "hint" }, answer.mapped ? "Mapped output" : "No mapping: sent as received", ` (${answer.content_type})`),
    h("pre", { class: "payload", "data-part": "mapped-output" }, body),
    duplicateKey(answer.duplicate_key));
}

function duplicateKey(key) {
  if (!key || !key.fields || !key.fields.length) return null;
  return h("p", { class: "hint" }, `Business key ${key.fields.join(", ")} = `,
    h("code", {}, JSON.stringify(key.values)), ` (duplicates: ${key.handling})`);
}
