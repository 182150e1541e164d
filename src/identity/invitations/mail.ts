/** Invitation e-mail over SMTP (nodemailer), when `identity.smtp.host` is set. */
// nodemailer (~6-9 ms to load) is loaded by the first message, not at start-up
import type { Transporter } from "nodemailer";
import type { IdentityConfig } from "../config";

export interface Mail {
  to: string;
  subject: string;
  text: string;
}

export interface Mailer {
  /** resolves once the SMTP server accepted the message; rejects with its reason */
  send(mail: Mail): Promise<void>;
  close(): void;
}

export function smtpMailer(cfg: IdentityConfig["smtp"]): Mailer | undefined {
  if (!cfg.host) return undefined;
  let transport: Promise<Transporter> | undefined;
  const connect = () => import("nodemailer").then(({ default: nodemailer }) => nodemailer.createTransport({
    host: cfg.host,
    port: cfg.port,
    secure: cfg.secure,
    requireTLS: cfg.require_tls,
    auth: cfg.user ? { user: cfg.user, pass: cfg.password ?? "" } : undefined,
    connectionTimeout: cfg.timeout_ms,
    greetingTimeout: cfg.timeout_ms,
    socketTimeout: cfg.timeout_ms,
  }));
  return {
    async send(mail) {
      await (await (transport ??= connect())).sendMail({ from: cfg.from, to: mail.to, subject: mail.subject, text: mail.text });
    },
    close: () => void transport?.then((t) => t.close(), () => {}),
  };
}
