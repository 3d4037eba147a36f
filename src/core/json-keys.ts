/**
 * Keys written twice in one JSON object. JSON.parse keeps the last silently,
 * so a fleet file with `owns` written twice would lose the first, or a later
 * `"owns": []` would widen a fence to the whole repository. Pure: no I/O.
 */

export interface DuplicateKey {
  /** Where the object sits, as validation names fields: `targets[2]`, or '' for the top level. */
  path: string;
  key: string;
  /** 1-based lines of the first and the repeated occurrence. */
  first_line: number;
  line: number;
}

type Frame = { kind: 'object'; path: string; keys: Map<string, number>; key: string | undefined } | { kind: 'array'; path: string; index: number };

function child(parent: Frame | undefined): string {
  if (!parent) return '';
  if (parent.kind === 'array') return `${parent.path}[${parent.index}]`;
  const key = parent.key ?? '';
  const plain = /^[A-Za-z_][\w-]*$/.test(key);
  return plain ? (parent.path ? `${parent.path}.${key}` : key) : `${parent.path}[${JSON.stringify(key)}]`;
}

/**
 * Duplicate keys of a text JSON.parse accepted. The scanner relies on that:
 * it only tells strings from structure and counts lines.
 */
export function duplicateJsonKeys(text: string): DuplicateKey[] {
  const out: DuplicateKey[] = [];
  const stack: Frame[] = [];
  let line = 1;
  let expectKey = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    const top = stack[stack.length - 1];
    if (ch === '\n') line++;
    else if (ch === '"') {
      let j = i + 1;
      while (text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
      if (expectKey && top?.kind === 'object') {
        const key = JSON.parse(text.slice(i, j + 1)) as string;
        const first = top.keys.get(key);
        if (first !== undefined) out.push({ path: top.path, key, first_line: first, line });
        else top.keys.set(key, line);
        top.key = key;
        expectKey = false;
      }
      i = j;
    } else if (ch === '{') {
      stack.push({ kind: 'object', path: child(top), keys: new Map(), key: undefined });
      expectKey = true;
    } else if (ch === '[') {
      stack.push({ kind: 'array', path: child(top), index: 0 });
    } else if (ch === '}' || ch === ']') {
      stack.pop();
    } else if (ch === ',') {
      if (top?.kind === 'object') expectKey = true;
      else if (top?.kind === 'array') top.index++;
    }
  }
  return out;
}
