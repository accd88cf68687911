/** Types of config-v8-flags.mjs (plain JavaScript: it runs before each workerd start, without tsx). */
export function withV8Flags(config: Uint8Array, flags: string[]): Uint8Array;
export function v8FlagsOf(config: Uint8Array): string[];
