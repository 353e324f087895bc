// Application names a third party may not take (13.10: an application named like the first-party
// explorer got a consent page identical to the explorer's). Compared after NFKC, case folding and
// homoglyph mapping (unhomoglyph, from Unicode's confusables table), with spaces and punctuation
// ignored, so "GАTS Ехрlorer" (Cyrillic А, Е, х, р) or "G.A.T.S-explorer" are caught too.
import unhomoglyph from 'unhomoglyph';

/** Names of the built-in clients and of the service itself, and the service's short name. */
const RESERVED_NAMES = ['Game Asset Tracking Service', 'GATS Explorer', 'GATS demo client', 'GATS'];

function words(name: string): string[] {
  return unhomoglyph(name.normalize('NFKC').toLowerCase())
    .toLowerCase()
    .split(/[^\p{L}\p{N}]+/u)
    .filter(Boolean);
}

const squash = (name: string) => words(name).join('');
const reservedSquashed = RESERVED_NAMES.filter((name) => words(name).length > 1).map(squash);

/**
 * Why `name` cannot be a third-party application's name, or null: it contains the word "gats" or the
 * name of a built-in client or of the service (however spaced, cased or spelled with look-alikes).
 */
export function reservedNameProblem(name: string): string | null {
  if (words(name).includes('gats')) return 'must not contain "GATS", the service\'s name';
  const squashed = squash(name);
  if (reservedSquashed.some((reserved) => squashed.includes(reserved))) {
    return 'must not contain the name of the service or of one of its own applications';
  }
  return null;
}
