// The admin API's signing keys (docs/guides/admin-api.md, Signing keys): what a key is, never its material.
import Type from 'typebox';
import { problemResponse } from '../../http/representation/openapi.ts';

const Timestamp = Type.String({ format: 'date-time', description: 'UTC, RFC 3339.' });

const SigningKey = Type.Object({
  Kid: Type.String({ description: 'The key id: the RFC 7638 thumbprint for a JWS key, as published at /oauth/jwks.' }),
  Alg: Type.String({ description: 'RS256, ES256, EdDSA … for `jws`; HS256 for `cookie`.' }),
  Use: Type.Union([Type.Literal('jws'), Type.Literal('cookie')], {
    description: '`jws` signs ID and access tokens; `cookie` signs the authorization server’s cookies.',
  }),
  CreatedAtUtc: Timestamp,
  RetiredAtUtc: Type.Union([Timestamp, Type.Null()], {
    description: 'Retired keys sign nothing more but stay published (and accepted) until what they signed expired.',
  }),
});

const KeyList = Type.Object({ Items: Type.Array(SigningKey) });
const Rotated = Type.Object({
  Kids: Type.Array(Type.String(), { description: 'The new JWS keys, which this instance signs with from now on.' }),
  Items: Type.Array(SigningKey),
});

const NO_AUTH_SERVER = problemResponse(
  'This instance runs no built-in authorization server (AUTH_SERVER_ENABLED=false): it holds no signing keys.',
);

export const KeyListResponses = { 200: KeyList, 404: NO_AUTH_SERVER };
export const RotateResponses = { 200: Rotated, 404: NO_AUTH_SERVER };
