// A token never carries more than the user's role allows.
import { describe, expect, it } from 'vitest';
import { grantableScopes, scopesAllowedFor } from '../../../src/auth/scopes.ts';

describe('role allowances', () => {
  it('gives players and studios the base scopes, oracles prices:write, admins everything', () => {
    const base = [
      'openid',
      'offline_access',
      'assets:read',
      'assets:write',
      'transfers:write',
      'identity:write',
    ];
    expect([...scopesAllowedFor('player')].sort()).toEqual([...base].sort());
    expect([...scopesAllowedFor('studio')].sort()).toEqual([...base].sort());
    expect([...scopesAllowedFor('oracle')].sort()).toEqual([...base, 'prices:write'].sort());
    expect(scopesAllowedFor('admin').has('users:admin')).toBe(true);
    expect(scopesAllowedFor('oracle').has('users:admin')).toBe(false);
  });

  it('intersects requested scopes with the allowance, all allowed when nothing is requested', () => {
    expect(grantableScopes('player', ['assets:read', 'prices:write', 'users:admin'])).toEqual([
      'assets:read',
    ]);
    expect(grantableScopes('oracle', ['prices:write', 'bogus'])).toEqual(['prices:write']);
    expect(grantableScopes('admin')).toContain('users:admin');
    expect(grantableScopes('player', [])).toEqual([]);
  });
});
