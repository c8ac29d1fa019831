/**
 * Upper-cases the ASCII letters a–z only. `String.prototype.toUpperCase`
 * maps some other letters onto ASCII ones (`ſ` → `S`, `ı` → `I`), so a code
 * checked after it would let `uſd` pass as `USD`.
 */
export function asciiUpperCase(text: string): string {
  return text.replace(/[a-z]+/g, (letters) => letters.toUpperCase());
}
