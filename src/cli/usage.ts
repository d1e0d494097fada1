// What each command takes, and its help text: the parser and `sessionfold help` read the same
// table, so the help can never describe an option the parser does not know, or miss one.

export interface CommandSpec {
  /** Session ids: none, exactly one, any number (none means all), or at least one. */
  ids: 'none' | 'one' | 'any' | 'some'
  /** The command's own options, besides --dir, --url, --schema, --json and --help. */
  options: Record<string, string>
  /** What follows `sessionfold` on the usage line. */
  synopsis: string
  /** One line for the command list. */
  summary: string
  /** What people need to know beyond the summary. */
  details: string
  /** One example (after `$ `), the one in the guide's list of commands (docs/guide/cli.md). */
  example: string
}

export const COMMANDS = {
  ls: {
    ids: 'none',
    options: {
      '--roots': 'only sessions without a parent (roots and forks), as store.sessions() lists by default',
      '--tag': 'TAG  only sessions with this tag',
      '--search': 'TEXT  only sessions whose title holds TEXT (case-insensitive)',
      '--order': 'created|activity  newest first by creation (the default) or by last event',
      '--limit': 'N  at most N sessions (1 to 1000)',
    },
    synopsis: 'ls [--roots] [--tag TAG] [--search TEXT] [--order created|activity] [--limit N]',
    summary: 'sessions, newest first: origin, events, title, parent, label, cwd',
    details:
      "Lists every session of the store, or those the query takes (the query of store.sessions()).\nPARENT is the spawning parent of a subagent or the session a fork was made from; LABEL is a\nsubagent's own label (its descriptor); TITLE and TAGS are its sessionMeta. Damaged sessions\nare listed as DAMAGED (without a query) and make the exit status 1.",
    example: 'sessionfold ls',
  },
  show: {
    ids: 'one',
    options: { '--at': 'N  the session as it was after its first N events (0 to its length)' },
    synopsis: 'show <id> [--at N]',
    summary: 'header, identity, timing, children and every projection value',
    details:
      'Folds the session from storage (its checkpoint, then the events after it) and shows its\nheader, its identity (mode and label), its turn timing, its subagent catalog as rows, any\nother projection value, and the faults of units that stopped folding. With --at N, all of it\nas it was after the first N events (from the nearest history row, at the same cost anywhere).',
    example: 'sessionfold show agent-1 --at 120',
  },
  tree: {
    ids: 'one',
    options: { '--at': "N  the top session's children as its catalog listed them after its first N events" },
    synopsis: 'tree <id> [--at N]',
    summary: 'the subagent tree: mode, label, activity, diagnostics',
    details:
      'Walks the parent-owned catalogs recursively. A child whose session cannot be read is shown\nas "! unavailable", one that is not the parent\'s own (or whose catalog is rejected) as\n"! corrupt". With --at N, the top session\'s catalog as it was after its first N events; each\nchild (and its own children) as it is now.',
    example: 'sessionfold tree agent-1 --at 120',
  },
  events: {
    ids: 'one',
    options: {
      '--from': 'N  first seq to print (default 0)',
      '--to': 'N  stop before this seq',
      '--follow': 'keep printing appends (by any process) until Ctrl-C',
      '--definitions': 'FILE  a JavaScript module exporting your defineEvent() definitions: events printed at their latest version',
    },
    synopsis: 'events <id> [--from N] [--to N] [--follow] [--definitions FILE]',
    summary: 'events as NDJSON, one per line',
    details:
      "Prints the events of a session as NDJSON (always, --json or not), as they are stored. With\n--definitions, a module (.js or .mjs) whose exports (or lists of them) are defineEvent()\ndefinitions: each event of a type defined there is printed at its latest version, as an\napp's events() reads it; one of a version the module does not know, as stored.",
    example: 'sessionfold events agent-1 --from 10 --follow',
  },
  verify: {
    ids: 'none',
    options: {},
    synopsis: 'verify',
    summary: 'read every log, checkpoint and history row; exit 1 on damage',
    details:
      'Reads and checks every log, checkpoint and history row of the store, with a progress bar on a terminal.\nEach damaged session is listed with its code and detail.',
    example: 'sessionfold verify',
  },
  export: {
    ids: 'any',
    options: { '--tree': 'also every descendant of the given sessions (subagents, all levels)' },
    synopsis: 'export [<id>...] [--tree]',
    summary: 'sessions as NDJSON on stdout (all of them when no id is given)',
    details:
      'Writes sessions in the format `import` reads, parents before their children, and ends with\nan "end" line counting them (so a cut-off file is refused by import). With no id, every\nsession of the store. A session that cannot be read (a damaged one; with --tree, a\ndescendant whose catalog row cannot be followed) is left out and reported on stderr, and the\nexit status is 1; the rest is exported whole.',
    example: 'sessionfold export agent-1 --tree > agent-1.ndjson',
  },
  import: {
    ids: 'none',
    options: {},
    synopsis: 'import < file',
    summary: 'an export, from stdin, into the store (created if needed)',
    details:
      'Checks the whole input before it creates or writes anything: bad input is an error\n(INVALID_ARGUMENT) and leaves the store, or its absence, as it was. Never overwrites: a\nsession that differs is reported as a conflict and left as it was; importing the same\nexport twice changes nothing.',
    example: 'sessionfold import --dir copy < agent-1.ndjson',
  },
  delete: {
    ids: 'some',
    options: { '--tree': 'also every descendant of the given sessions (subagents, all levels)' },
    synopsis: 'delete <id>... [--tree]',
    summary: 'delete sessions (with --tree, their descendants too)',
    details:
      'Checks every session first and deletes none unless all can go: a missing one is\nSESSION_NOT_FOUND, one open for writing (by any process) SESSION_LOCKED. On --url, a\nsession is open for writing while a process holds its write lease. Children are\ndeleted before their parents. Without --tree only the named sessions go: their subagents\nstay, and a deleted child shows as "! unavailable" in its parent\'s tree. With --tree, a\ndescendant whose catalog row cannot be followed refuses the whole delete (CORRUPT_LOG).',
    example: 'sessionfold delete agent-1 --tree',
  },
  help: {
    ids: 'none',
    options: {},
    synopsis: 'help [<command>]',
    summary: "this text, or one command's options",
    details: 'Also: sessionfold --help, sessionfold <command> --help.',
    example: 'sessionfold help export',
  },
} satisfies Record<string, CommandSpec>

export type CommandName = keyof typeof COMMANDS

export const isCommand = (name: string): name is CommandName => Object.hasOwn(COMMANDS, name)

const GLOBAL_OPTIONS: [string, string][] = [
  ['--dir <path>', "the store's folder (default: .sessionfold)"],
  ['--url <url>', 'a PostgreSQL store instead: postgres://user:password@host:port/database'],
  ['--schema <name>', 'the schema of its tables, with --url (default: sessionfold)'],
  ['--key-file <path>', 'the key of an encrypted store (32 bytes: raw, hex or base64); or set SESSIONFOLD_KEY'],
  ['--json', 'machine-readable output; errors as {"error":{"code","message"}} on stderr'],
  ['-h, --help', 'usage (of the command, when one is given)'],
]

const EXIT = 'Exit status: 0 done, 1 damage found or the operation failed, 2 usage error.'

const table = (rows: [string, string][], indent = 2) => {
  const width = Math.max(...rows.map(([a]) => a.length))
  return rows.map(([a, b]) => `${' '.repeat(indent)}${a.padEnd(width)}   ${b}`).join('\n')
}

/** `sessionfold help`: every command and the options all of them take. */
export function generalUsage(): string {
  return [
    'Usage: sessionfold <command> [options]',
    '',
    'Commands (on the fs store in --dir, or the PostgreSQL store at --url):',
    // Without their options (`help <command>` has those), so the list stays narrow.
    table(Object.values(COMMANDS).map((c) => [c.synopsis.replace(/ \[--[^\]]*\]/g, ''), c.summary])),
    '',
    'Options of every command:',
    table(GLOBAL_OPTIONS),
    '',
    "sessionfold --version prints the version; sessionfold help <command> a command's options.",
    '',
    EXIT,
    '',
  ].join('\n')
}

/** `sessionfold help <command>`: its usage line, what it does, its options and an example. */
export function commandUsage(name: CommandName): string {
  const c: CommandSpec = COMMANDS[name]
  const options = name === 'help' ? [] : GLOBAL_OPTIONS
  const own = Object.entries(c.options).map(([flag, text]): [string, string] => {
    const [arg, rest] = text.startsWith('N  ') ? [' N', text.slice(3)] : ['', text]
    return [`${flag}${arg}`, rest]
  })
  return [
    `Usage: sessionfold ${c.synopsis}${name === 'help' ? '' : ' [--dir <path> | --url <url> [--schema <name>]] [--json]'}`,
    '',
    `${c.summary.charAt(0).toUpperCase() + c.summary.slice(1)}.`,
    c.details,
    '',
    ...(own.length + options.length > 0 ? ['Options:', table([...own, ...options]), ''] : []),
    'Example:',
    `  $ ${c.example}`,
    '',
    EXIT,
    '',
  ].join('\n')
}
