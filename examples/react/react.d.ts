// The one React API the example uses, so it compiles here without React installed.
declare module 'react' {
  export function useSyncExternalStore<T>(subscribe: (onChange: () => void) => () => void, getSnapshot: () => T): T
}
