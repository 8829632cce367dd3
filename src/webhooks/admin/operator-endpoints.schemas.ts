// Schemas of the operator endpoints' routes (operator-endpoints.routes.ts): the clients' endpoint members, with
// the operator event types in place of the clients' catalogue.
import Type from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';
import { OPERATOR_EVENT_DESCRIPTIONS, OPERATOR_EVENT_TYPES } from '../outbox/events.catalogue.ts';
import {
  AdminEndpoint,
  DeleteEndpointResponses,
  Description,
  RotatedSecret,
  Secret,
  Url,
} from '../api/webhooks.schemas.ts';
import { AdminDelivery } from './deliveries.schemas.ts';

export { EndpointIdParams } from './webhooks.schemas.ts';
export { RotateSecretBody } from '../api/webhooks.schemas.ts';

const OperatorEvents = Type.Array(
  Type.String({
    minLength: 1,
    maxLength: 100,
    description: OPERATOR_EVENT_TYPES.map((t) => `\`${t}\`: ${OPERATOR_EVENT_DESCRIPTIONS[t]}`).join('\n'),
  }),
  { minItems: 1, maxItems: 10, description: 'Operator event types to receive (no `*`): `["audit.entry"]`.' },
);

export const CreateOperatorEndpointBody = Type.Object(
  { Url, Events: OperatorEvents, Description: Type.Optional(Description), Secret: Type.Optional(Secret) },
  { additionalProperties: false },
);

export const PatchOperatorEndpointBody = Type.Object(
  {
    Url: Type.Optional(Url),
    Events: Type.Optional(OperatorEvents),
    Description: Type.Optional(Type.Union([Description, Type.Null()])),
    Enabled: Type.Optional(Type.Boolean()),
  },
  {
    additionalProperties: false,
    minProperties: 1,
    description: 'JSON Merge Patch (RFC 7396) of the members that can change.',
  },
);

const CLIENTS_ENDPOINT = 'The endpoint is a client’s: its client changes it (an admin may disable or enable it).';
const DISABLED = 'The endpoint is disabled: enable it with PATCH {"Enabled": true} first.';

export const CreateOperatorEndpointResponses = {
  201: Type.Object({
    ...AdminEndpoint.properties,
    Secret: Type.String({ description: 'Shown only now: store it to verify signatures.' }),
  }),
};
export const OperatorEndpointResponses = { 200: AdminEndpoint, 403: problemResponse(CLIENTS_ENDPOINT) };
export const DeleteOperatorEndpointResponses = {
  204: DeleteEndpointResponses[204],
  403: problemResponse(CLIENTS_ENDPOINT),
};
export const RotateSecretResponses = {
  200: RotatedSecret,
  403: problemResponse(CLIENTS_ENDPOINT),
  409: problemResponse('A rotation’s overlap is still running (both secrets sign until it ends).'),
};
export const PingResponses = {
  202: AdminDelivery,
  403: problemResponse(CLIENTS_ENDPOINT),
  409: problemResponse(DISABLED),
};
