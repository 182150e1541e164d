/** Structured JSON logs on stdout (one object per line). */
export type Level = "debug" | "info" | "warn" | "error";
const ORDER: Record<Level, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export class Logger {
  constructor(private readonly min: Level = "info", private readonly sink: (line: string) => void = (l) => process.stdout.write(l + "\n")) {}
  log(level: Level, msg: string, fields?: Record<string, unknown>) {
    if (ORDER[level] < ORDER[this.min]) return;
    this.sink(JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields }));
  }
  debug = (msg: string, f?: Record<string, unknown>) => this.log("debug", msg, f);
  info = (msg: string, f?: Record<string, unknown>) => this.log("info", msg, f);
  warn = (msg: string, f?: Record<string, unknown>) => this.log("warn", msg, f);
  error = (msg: string, f?: Record<string, unknown>) => this.log("error", msg, f);
}
