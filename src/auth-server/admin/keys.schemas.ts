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
  State: Type.Union([Type.Literal('signing'), Type.Literal('pending'), Type.Literal('retired')], {
    description:
      '`signing`: signs new tokens (or cookies); `pending`: published, and signs from `ActivatesAtUtc` on, once every instance has had time to load it; `retired`: signs nothing more but stays published (and accepted) until what it signed expired.',
  }),
  CreatedAtUtc: Timestamp,
  ActivatesAtUtc: { ...Timestamp, description: 'When it starts (or started) signing. UTC, RFC 3339.' },
  RetiredAtUtc: Type.Union([Timestamp, Type.Null()], {
    description:
      'When it stops (or stopped) signing: for a key a rotation replaces, the new key’s `ActivatesAtUtc`; null while nothing replaces it.',
  }),
});

const KeyList = Type.Object({ Items: Type.Array(SigningKey) });
const Rotated = Type.Object({
  Kids: Type.Array(Type.String(), {
    description: 'The new JWS keys: published from now on, signing from `ActivatesAtUtc` on every instance.',
  }),
  ActivatesAtUtc: { ...Timestamp, description: 'When the new keys start signing (now + KEY_ROTATION_DELAY).' },
  Items: Type.Array(SigningKey),
});

const NO_AUTH_SERVER = problemResponse(
  'This instance runs no built-in authorization server (AUTH_SERVER_ENABLED=false): it holds no signing keys.',
);

export const KeyListResponses = { 200: KeyList, 404: NO_AUTH_SERVER };
export const RotateResponses = { 200: Rotated, 404: NO_AUTH_SERVER };
