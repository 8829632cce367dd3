// Table types as Kysely sees them. Dates cross the boundary through codecs.ts.
import type { Generated } from 'kysely';

export type DbTime = string | Date;

export interface OrdersTable {
  id: Generated<number>;
  customer_id: string;
  total_minor: number;
  currency: string;
  status: string;
  version: number;
  created_at: DbTime;
  updated_at: DbTime;
}

export interface OrderStatusChangesTable {
  id: Generated<number>;
  order_id: number;
  status: string;
  changed_at: DbTime;
}

export interface IdempotencyKeysTable {
  caller: string;
  key: string;
  fingerprint: string;
  state: 'in_flight' | 'done';
  locked_until: DbTime;
  response_status: number | null;
  response_headers: string | null;
  response_body: string | null;
  created_at: DbTime;
  expires_at: DbTime;
}

export interface Database {
  orders: OrdersTable;
  order_status_changes: OrderStatusChangesTable;
  idempotency_keys: IdempotencyKeysTable;
}
