// The receiver kit's public API (package export "./receiver"). It imports nothing from the producer
// side of Signet: a consumer can use it against any producer that signs the same way.
export { verifySignature, signBody, type SignatureCheck, type SignatureFailure } from './signature.ts';
export { acceptDelivery, type IntakeOptions, type IntakeResult, type IntakeRequest } from './intake.ts';
export { problem, PROBLEM_CONTENT_TYPE, type Problem, type ProblemSlug } from './problems.ts';
export { openInbox, type ClaimOptions, type Inbox, type InboxEntry, type NewInboxEntry } from './inbox.ts';
export {
  InboxWorker,
  DEFAULT_RETRY_SCHEDULE_MS,
  DEFAULT_RETENTION_MS,
  DEFAULT_LEASE_MS,
  type InboxWorkerOptions,
  type WorkerLog,
} from './worker.ts';
export type { EventHandler, ReceivedEvent } from './event.ts';
export { Reconciler, type ReconcilerOptions } from './reconciler.ts';
export { receiverPlugin, type ReceiverPluginOptions } from './fastify-plugin.ts';
export { createWebhookHandler, type WebhookHandlerOptions } from './node-handler.ts';
export {
  startStandaloneReceiver,
  jsonLinesHandler,
  DEFAULT_DATABASE,
  type StandaloneOptions,
  type StandaloneReceiver,
} from './standalone.ts';
