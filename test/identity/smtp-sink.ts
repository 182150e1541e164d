/**
 * An SMTP server on loopback that keeps every message it receives (smtp-server), with a user and
 * password it requires, for the invitation delivery tests. `messages` are decoded enough to read
 * the text body (quoted-printable soft breaks and escapes undone).
 */
import { SMTPServer } from "smtp-server";
import type { AddressInfo } from "node:net";

export interface SinkMessage {
  from: string;
  to: string[];
  raw: string;
  /** the raw message with quoted-printable undone */
  text: string;
}

export interface SmtpSink {
  port: number;
  user: string;
  password: string;
  messages: SinkMessage[];
  stop(): Promise<void>;
}

const unQuotedPrintable = (s: string) => s.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(parseInt(h, 16)));

export async function startSmtpSink(): Promise<SmtpSink> {
  const messages: SinkMessage[] = [];
  const user = "svc-mailer";
  const password = "sink-password";
  const server = new SMTPServer({
    disabledCommands: ["STARTTLS"],
    allowInsecureAuth: true,
    logger: false,
    onAuth(auth, _session, cb) {
      if (auth.username === user && auth.password === password) cb(null, { user });
      else cb(new Error("invalid credentials"));
    },
    onData(stream, session, cb) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        messages.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: unQuotedPrintable(raw),
        });
        cb();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return { port, user, password, messages, stop: () => new Promise<void>((r) => server.close(() => r())) };
}
