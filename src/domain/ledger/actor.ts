import type { UserRole } from '../../db/entities/User.ts';

/** Who performs a ledger operation: the authenticated user and their role. */
export interface Actor {
  userId: string;
  role: UserRole;
}
