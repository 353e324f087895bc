// The range of ledger amounts, apart from the column type (uint256.ts), so that code reading amounts
// without the ORM (the holdings listings' thread) does not load the ORM with it.

/** 2^256 - 1: the largest ledger amount, as on an EVM chain. */
export const UINT256_MAX = (1n << 256n) - 1n;
/** Its decimal digits, which size the columns. */
export const UINT256_DIGITS = 78;
