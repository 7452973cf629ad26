/**
 * JSON objects whose keys come from users (event properties, header maps) cannot always be stored as they are: the
 * database refuses a field name that starts with `$` or holds a `.` (FerretDB for every write, MongoDB for several
 * operators). Such an object is stored as its JSON text instead, and read back either way. Only for fields whose
 * value is an object (or null) on the wire, so a stored string is never ambiguous.
 */

/** Whether any key of `value`, at any depth, cannot be a field name of the database. */
export function hasUnstorableKeys(value: unknown): boolean {
  if (value === null || typeof value !== 'object') return false;
  if (Array.isArray(value)) return value.some(hasUnstorableKeys);
  if (value instanceof Date) return false;
  for (const key in value) {
    if (key.startsWith('$') || key.includes('.') || key.includes('\0')) return true;
    if (hasUnstorableKeys((value as Record<string, unknown>)[key])) return true;
  }
  return false;
}

/** The form in which an object-valued field is stored: itself, or its JSON text when a key cannot be stored. */
export function storedJson<T>(value: T): T | string {
  return hasUnstorableKeys(value) ? JSON.stringify(value) : value;
}

/** An object-valued field as stored (by `storedJson`, or by a version that stored every object as it was). */
export function loadedJson<T>(value: T | string): T {
  return typeof value === 'string' ? (JSON.parse(value) as T) : value;
}
