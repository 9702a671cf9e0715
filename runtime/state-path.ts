/**
 * A machine state value as a readable string: the dotted path of the active state (`running.batch2`), parallel
 * regions joined with `, ` (`a.x, b.y`). Used by diagnostics(), where a JSON string would be noise.
 */
import type { StateValue } from 'xstate';

export function statePath(value: StateValue): string {
  if (typeof value === 'string') return value;
  return Object.entries(value)
    .map(([key, child]) => {
      if (child === undefined) return key;
      const rest = statePath(child as StateValue);
      return rest === '' ? key : `${key}.${rest}`;
    })
    .join(', ');
}
