import { defineEntity, type InferEntity, p } from '@mikro-orm/core';

export const USER_ROLES = ['player', 'studio', 'oracle', 'admin'] as const;
export type UserRole = (typeof USER_ROLES)[number];

export const User = defineEntity({
  name: 'User',
  // `user` is a reserved word on PostgreSQL (`select * from user` answers current_user).
  tableName: 'users',
  properties: {
    id: p.string().primary(),
    username: p.string(),
    // Usernames are unique regardless of case; the displayed spelling stays in `username`.
    usernameNormalized: p.string().unique(),
    passwordHash: p.string().hidden(),
    role: p.enum(USER_ROLES),
    createdAt: p.datetime(),
  },
});
export type User = InferEntity<typeof User>;
