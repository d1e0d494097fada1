// The React APIs the example uses, so it compiles here without React installed.
declare module 'react' {
  export function useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, getSnapshot: () => T): T
  export function createElement(type: string, props: Record<string, unknown> | null, ...children: unknown[]): unknown
}
