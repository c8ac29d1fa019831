/** A member an object of the JSON text gives twice, and where its second occurrence starts (0-based). */
export interface RepeatedMember {
  readonly name: string;
  readonly position: number;
}

/**
 * The first member any object of `json` gives twice — spellings that decode
 * to the same name (`"amount"`, `"\u0061mount"`) are one member — or
 * undefined. RFC 8259 §4 leaves the meaning of such an object to each
 * reader (JSON.parse keeps the last, a proxy or a log reader may keep the
 * first), so a write that has one is refused rather than read one of the ways.
 *
 * `json` must already be well-formed (JSON.parse accepted it): this only
 * walks its strings and brackets.
 */
export function firstRepeatedMember(json: string): RepeatedMember | undefined {
  // One entry per open bracket: the names seen in an object, null for an array.
  const open: (Set<string> | null)[] = [];
  for (let i = 0; i < json.length; i += 1) {
    const char = json[i];
    if (char === '{') open.push(new Set());
    else if (char === '[') open.push(null);
    else if (char === '}' || char === ']') open.pop();
    else if (char === '"') {
      const end = closingQuote(json, i);
      const names = open.at(-1);
      if (names && isMemberName(json, end + 1)) {
        const name = JSON.parse(json.slice(i, end + 1)) as string;
        if (names.has(name)) return { name, position: i };
        names.add(name);
      }
      i = end;
    }
  }
  return undefined;
}

/** The index of the quote that closes the string opening at `start`. */
function closingQuote(json: string, start: number): number {
  let i = start + 1;
  while (json[i] !== '"') i += json[i] === '\\' ? 2 : 1;
  return i;
}

/** Whether the string ending before `from` is followed by a colon: a member's name, not a value. */
function isMemberName(json: string, from: number): boolean {
  let i = from;
  while (json[i] === ' ' || json[i] === '\t' || json[i] === '\n' || json[i] === '\r') i += 1;
  return json[i] === ':';
}
