// Issue 35, the trait floor: the attribute values a listing is found under in `listing_trait`
// (src/db/entities/ListingTrait.ts). Both ledger stores derive them here from the item's metadata,
// the SQLite store directly and the PostgreSQL store in the plan's wire, so they cannot disagree.

/** Longest `trait_type` and value kept (the columns' widths; the floor's query asks for less). */
const MAX_TYPE = 100;
const MAX_VALUE = 500;

/**
 * The distinct `[trait_type, value]` pairs of `metadata.attributes`, each value as its text (`7`,
 * `true`), as trait offers name them; only string, number and boolean values (an object's text
 * names nothing), and none longer than the columns.
 */
export function listingTraitsOf(metadata: Record<string, unknown> | undefined): [string, string][] {
  const attributes = metadata?.attributes;
  if (!Array.isArray(attributes)) return [];
  const seen = new Map<string, [string, string]>();
  for (const attribute of attributes as { trait_type?: unknown; value?: unknown }[]) {
    const { trait_type: type, value } = attribute ?? {};
    if (typeof type !== 'string' || !['string', 'number', 'boolean'].includes(typeof value)) continue;
    const text = String(value);
    if (type.length > MAX_TYPE || text.length > MAX_VALUE) continue;
    seen.set(JSON.stringify([type, text]), [type, text]);
  }
  return [...seen.values()];
}
