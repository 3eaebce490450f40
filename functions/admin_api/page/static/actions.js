// An operator's moves on one message, shared by the queue rows and the message view (erase: the
// view only): each asks first, and each is one request with its own Idempotency-Key (api.js). A reprocess of a message
// the destination already accepted needs a second, explicit confirmation (the API answers 409
// already_delivered without `force`).
import { ApiError } from "./api.js";
import { confirmAction } from "./ui.js";

/** Statuses where no execution runs, so a reprocess can start one. */
export const REPROCESSABLE = new Set(["error", "dead_letter", "cancelled", "sent", "received_observed", "duplicate_rejected"]);
/** Statuses whose pending retry (or dead-lettering) an operator can stop. */
export const CANCELLABLE = new Set(["retry_pending", "dead_letter"]);

/** Reprocesses after a confirmation; the API's answer, or null when the operator said no. */
export async function reprocess(ctx, message) {
  const id = message.message_id;
  const sure = await confirmAction(
    `Reprocess ${id}? Its pipeline runs again from the start as a new execution.`, "Reprocess");
  if (!sure) return null;
  try {
    return await ctx.api("POST", "/api/edi-hub/reprocess-message", { body: { message_id: id } });
  } catch (error) {
    if (!(error instanceof ApiError && error.code === "already_delivered")) throw error;
    const status = (error.details && error.details.pipeline_status) || message.pipeline_status;
    const again = await confirmAction(alreadyDelivered(id, status, message.dest_status), "Send it again", "Already delivered");
    if (!again) return null;
    // A new decision with another body: a new request, with its own key.
    return ctx.api("POST", "/api/edi-hub/reprocess-message", { body: { message_id: id, force: true } });
  }
}

function alreadyDelivered(id, status, destStatus) {
  const accepted = status === "received_observed"
    ? `${id} was already recorded as received by its destination (observability mode, status received_observed).`
    : `The destination already accepted ${id} (status ${status || "sent"}${destStatus ? `, its answer ${destStatus}` : ""}).`;
  return `${accepted} Reprocessing sends it again: the destination receives it a second time, with the `
    + `same Idempotency-Key (${id}), which only a destination that honours the key ignores. Send it again anyway?`;
}

/** Cancels after a confirmation; the API's answer, or null when the operator said no. */
export async function cancel(ctx, message) {
  const id = message.message_id;
  const sure = await confirmAction(`Cancel ${id}? It stops for good: no further attempt is made.`, "Cancel message");
  if (!sure) return null;
  return ctx.api("POST", `/api/admin/messages/${id}/cancel-retry`);
}

/** Erases the message now (LGPD / GDPR) after a confirmation; the API's answer, or null when the
 * operator said no. */
export async function erase(ctx, message) {
  const id = message.message_id;
  const sure = await confirmAction(
    `Erase ${id} now? Its payload, status callbacks and the message itself are deleted for good `
      + "(the audit log keeps its id only). Another message of this integration with the very same "
      + "payload loses its payload too.",
    "Erase",
    "Erase (GDPR)",
  );
  if (!sure) return null;
  return ctx.api("POST", `/api/admin/messages/${id}/erase`);
}
