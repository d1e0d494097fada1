export function explain(): string { return '' }
